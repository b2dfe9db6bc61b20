/*
 * The buyer's return page (edge/http/return_page.py): sends the buyer on from where they came
 * back from the provider. Loaded before the page's body, so it acts before anything shows.
 *
 * In the payment popup the <cm-button> opened (window name "cm-approval", with its opener):
 * the main window goes on (to the success address, or to this page shown again to say what
 * went wrong) and the popup closes itself. Anywhere else: a success goes on in this window; a
 * failure stays, to say what happened.
 */
(() => {
  'use strict';
  const {succeeded, next, main} = document.currentScript.dataset;
  let opener = null;
  try {
    if (window.name === 'cm-approval' && window.opener && !window.opener.closed) opener = window.opener;
  } catch {
    opener = null;
  }
  if (opener) {
    try {
      // told first, so the button shows "taking you back" rather than "the window was closed"
      opener.postMessage({type: 'cm-returned'}, '*');
      opener.location.replace(main);
      window.close();
      return;
    } catch {
      // the opener went away meanwhile: go on in this window
    }
  }
  if (succeeded === 'true') window.location.replace(next);
})();

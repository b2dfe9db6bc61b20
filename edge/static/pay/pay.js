/*
 * The payment link's pages (edge/http/pay_page.py). Loaded deferred: it runs once the page is
 * parsed, before the buyer can click anything.
 *
 * - Every amount (<data class="money" value="19.99" data-currency="EUR">) is written as the
 *   page's language writes it, with Intl.NumberFormat, as the <cm-button>'s window writes its
 *   prices: "19,99 €" on a German page, "€19.99" on an English one.
 * - The node's page at the end of a checkout, while the payment is being confirmed
 *   (data-status-url on <main>), long-polls the status endpoint and shows the new outcome as
 *   soon as the status changes.
 */
(() => {
  'use strict';

  const lang = document.documentElement.lang || undefined;
  for (const money of document.querySelectorAll('data.money')) {
    try {
      const format = new Intl.NumberFormat(lang, {style: 'currency', currency: money.dataset.currency});
      money.textContent = format.format(Number(money.value));
    } catch {
      // a currency this browser cannot format: the node's plain "19.99 XYZ" stays
    }
  }

  const watched = document.querySelector('main[data-status-url]');
  if (watched) follow(watched.dataset.statusUrl, Number(watched.dataset.version));

  const WAIT_S = 25; // a long poll's wait: one request every 25 s while nothing changes

  async function follow(url, version) {
    for (;;) {
      let pause = 0;
      try {
        const response = await fetch(`${url}?wait=${WAIT_S}&version=${version}`, {cache: 'no-store'});
        if (response.status === 200) {
          if ((await response.json()).version > version) {
            window.location.reload();
            return;
          }
        } else if (response.status === 429 || response.status === 503) {
          // too many, or the node busy (a project moving between cluster nodes): look again
          pause = Number(response.headers.get('Retry-After')) || WAIT_S;
        } else {
          return; // gone, or refused: the "check again" link stays
        }
      } catch {
        pause = WAIT_S; // offline for a moment
      }
      if (pause) await new Promise((done) => setTimeout(done, pause * 1000));
    }
  }
})();

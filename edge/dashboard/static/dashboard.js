// The dashboard's only script, progressive enhancement throughout: without it every page still
// works (the text to copy is there to select; a form that asks first asks on a page of its own).
//  - A button with data-copy copies the text of the element it names, and says so to screen
//    readers (the #copy-status live region) as well as on the button.
//  - A form with data-confirm-title asks first in a modal dialog, in the words the page would
//    use: focus goes into the dialog, stays there (Tab and Shift+Tab wrap), and goes back to the
//    button that asked when it closes (No, Escape); Yes posts the form as confirmed.

const copyStatus = document.getElementById("copy-status");

document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  let said;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = "Copied";
    said = "Copied to the clipboard.";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = "Selected: press Ctrl+C";
    said = "Selected: press Ctrl+C to copy.";
  }
  if (copyStatus) {
    copyStatus.textContent = "";
    setTimeout(() => { copyStatus.textContent = said; }, 50);
  }
  clearTimeout(button.copyTimer);
  button.copyTimer = setTimeout(() => { button.textContent = button.dataset.label; }, 4000);
});
for (const button of document.querySelectorAll("button[data-copy][hidden]")) button.hidden = false;

const dialog = document.getElementById("confirm-dialog");
let asking = null; // {form, submitter} while the dialog is open

function askFirst(event) {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirmTitle) return;
  if (!dialog || typeof dialog.showModal !== "function") return; // the page asks instead
  if (form.elements.namedItem("confirmed")) return; // confirmed: let it go
  event.preventDefault();
  const amount = form.elements.namedItem("amount");
  const typed = amount && amount.value ? amount.value.trim() : "";
  const sentence = typed && form.dataset.confirmAmountSentence
    ? form.dataset.confirmAmountSentence.replace("{amount}", typed)
    : form.dataset.confirmSentence;
  document.getElementById("confirm-dialog-title").textContent = form.dataset.confirmTitle;
  document.getElementById("confirm-dialog-sentence").textContent = sentence;
  document.getElementById("confirm-dialog-yes").textContent = form.dataset.confirmVerb;
  asking = { form, submitter: event.submitter || document.activeElement };
  dialog.showModal();
  document.getElementById("confirm-dialog-no").focus(); // the safe choice first
}

// No, Escape (even when Chromium closes the dialog without asking, at a second Escape): focus
// goes back to the button that asked. The close event comes a task later: one that finds the
// dialog open again (asked anew at once, from the keyboard) is not this asking's to end.
function returnFocus() {
  if (!asking || dialog.open) return;
  const { submitter } = asking;
  asking = null;
  if (submitter && submitter.isConnected) submitter.focus();
}

if (dialog) {
  document.addEventListener("submit", askFirst);
  document.getElementById("confirm-dialog-no").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", returnFocus);
  document.getElementById("confirm-dialog-yes").addEventListener("click", () => {
    if (!asking) return;
    const { form } = asking;
    const confirmed = document.createElement("input");
    confirmed.type = "hidden";
    confirmed.name = "confirmed";
    confirmed.value = "yes";
    form.append(confirmed);
    asking = null;
    dialog.close();
    form.submit();
  });
  dialog.addEventListener("keydown", (event) => {
    if (event.key !== "Tab") return;
    const inside = [...dialog.querySelectorAll("button, a[href], input, select, textarea")]
      .filter((element) => !element.disabled && element.offsetParent !== null);
    if (!inside.length) return;
    const first = inside[0];
    const last = inside[inside.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });
}

// The dashboard's only script: copy buttons (progressive enhancement: without it, the text is
// still there to select). A button with data-copy copies the text of the element it names.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = "Copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = "Selected: press Ctrl+C";
  }
});
for (const button of document.querySelectorAll("button[data-copy][hidden]")) button.hidden = false;

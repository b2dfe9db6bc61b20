// The demo shop's own script: remember each checkout the button starts, and follow its status
// with the node's long poll, exactly as a merchant's own page or backend could.
(() => {
  const node = document.body.dataset.node;
  const project = document.body.dataset.project;
  const rows = document.getElementById("rows");
  const cardForms = JSON.parse(document.body.dataset.cardForms || "{}");

  // A `token` checkout (Paddle) opens the provider's hosted card form: on a real shop, Paddle.js's
  // overlay (`Paddle.Initialize({token: publishableKey})`, then
  // `Paddle.Checkout.open({transactionId: token})`); here the simulator's stand-in page.
  for (const button of document.querySelectorAll("cm-button")) {
    button.cardForm = ({ provider, token }) => {
      const form = cardForms[provider];
      if (!form) throw new Error(`no card form for ${provider}`);
      const here = window.location.origin;
      const onward = new URLSearchParams({ success_url: `${here}/thanks`, close_url: `${here}/` });
      window.location.assign(`${form.replace("{token}", encodeURIComponent(token))}?${onward}`);
    };
  }
  const KEY = "edge-demo-checkouts";
  const saved = () => JSON.parse(sessionStorage.getItem(KEY) || "[]");

  document.addEventListener("cm-checkout-started", (event) => {
    const { txId, provider, productId } = event.detail;
    sessionStorage.setItem(KEY, JSON.stringify([{ txId, provider, productId }, ...saved()].slice(0, 10)));
    render();
  });

  function row(checkout) {
    let tr = document.getElementById(checkout.txId);
    if (!tr) {
      tr = document.createElement("tr");
      tr.id = checkout.txId;
      for (const text of [checkout.txId, checkout.provider, checkout.productId, "…"]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      rows.append(tr);
      follow(checkout.txId, tr.lastChild, 0);
    }
  }

  async function follow(txId, cell, version) {
    try {
      const response = await fetch(`${node}/status/${project}/${txId}?wait=25&version=${version}`);
      if (response.ok) {
        const record = await response.json();
        cell.textContent = record.subscriptionId ? `${record.status} (${record.subscriptionId})` : record.status;
        version = record.version;
      } else if (response.status === 429) {
        await new Promise((done) => setTimeout(done, 1000 * Number(response.headers.get("Retry-After") || 5)));
      } else {
        cell.textContent = `not yet stored (${response.status})`;
        await new Promise((done) => setTimeout(done, 2000));
      }
    } catch {
      await new Promise((done) => setTimeout(done, 3000));
    }
    follow(txId, cell, version);
  }

  function render() { saved().forEach(row); }
  render();
})();

/*
 * <cm-button>: the buy button of an edge payment node (CONTRACT section 5).
 *
 * Plain JavaScript, no dependency, no build step. The node serves this file with its public
 * signing keys filled in (SIGNING_KEYS below); load it from the node with the integrity hash
 * `edge button` prints, so the keys that vouch for the payment options are themselves vouched
 * for by the page.
 *
 * It speaks the buyer's language (CONTRACT 4.1): the element's `lang` (its own, or the nearest
 * ancestor's: the page's), then the browser's languages, the first one the node speaks; amounts,
 * dates and countries are written for that locale by Intl. The words are the node's catalogues
 * (edge/i18n/buyer), filled in below when it serves this file: one file, one integrity hash.
 */
(() => {
  'use strict';

  // Filled in by the node when it serves this file: the keys that sign public-info answers.
  const SIGNING_KEYS = /*@signing-keys*/[];

  const EVENT_OPTIONS = {bubbles: true, cancelable: true, composed: true};
  const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const SVG_NS = 'http://www.w3.org/2000/svg';

  // Filled in by the node when it serves this file: the buyer's words, {lang: {key: text}}, in
  // every language the node speaks. English has every key; a key another lacks is said in English.
  const CATALOGUES = /*@catalogues*/{};
  const DEFAULT_LANG = 'en';

  // The errors the window explains in the buyer's words (`error.<code>`); any other is the
  // fallback. error.code and error.message stay for the page's developer.
  const EXPLAINED = new Set(['network_error', 'signature_invalid', 'no_provider', 'rate_limited', 'card_form_unavailable']);
  // Providers whose checkout is a token for a hosted card form the page opens (CONTRACT 4.2).
  const TOKEN_HANDOFF = new Set(['paddle']);
  // no_provider errors where methods exist but each one's provider fails just now
  const ALL_DOWN = new WeakSet();

  // The providers' default labels (edge/providers: default_label) by kind of payment, said in the
  // buyer's language; a label the merchant chose is shown as chosen. A default told apart by its
  // provider's name keeps the name: "Card (Paddle)" is "Karte (Paddle)".
  const DEFAULT_LABELS = {
    card: ['Card', 'method.card'],
    form: ['Card', 'method.card'],
    crypto: ['Crypto', 'method.crypto'],
    manual: ['Pay by mail', 'method.manual'],
  };
  const INTERVALS = new Set(['day', 'week', 'month', 'year']);

  /** The Error every `cm-error` carries in `detail.error`: `code` is for programs. */
  class CmError extends Error {
    constructor(code, message, {cause, status = null, retryable = false, requestId = null} = {}) {
      super(message, cause === undefined ? undefined : {cause});
      this.name = 'CmError';
      this.code = code;
      this.status = status;
      this.retryable = retryable;
      this.requestId = requestId;
    }
  }

  // -- the buyer's language ----------------------------------------------------------------------

  /** The primary language subtag of a BCP 47 tag ('de' of 'de-AT'), lower case; '' for none. */
  function primarySubtag(tag) {
    const primary = String(tag || '').trim().replace(/_/g, '-').split('-')[0].toLowerCase();
    return /^[a-z]{2,8}$/.test(primary) ? primary : '';
  }

  /** `tag` as Intl takes it, or `fallback` when Intl refuses it ('en_GB', 'x!'). */
  function intlLocale(tag, fallback) {
    try {
      return Intl.getCanonicalLocales(String(tag).trim().replace(/_/g, '-'))[0] || fallback;
    } catch {
      return fallback;
    }
  }

  /** The `lang` in force at `element`: its own or its nearest ancestor's, across shadow roots. */
  function declaredLang(element) {
    for (let node = element; node;) {
      const found = node.closest('[lang]');
      if (found) return found.getAttribute('lang');
      const root = node.getRootNode();
      node = root instanceof ShadowRoot ? root.host : null;
    }
    return '';
  }

  /** What the window says and how it writes amounts, dates and countries, in one language. */
  class Speech {
    constructor(lang, locale) {
      this.lang = lang; // a language of CATALOGUES
      this.locale = locale; // the tag that chose it ('de-AT'), for Intl
    }

    /** The buyer's language at `element` (CONTRACT 4.1): its `lang`, then the browser's. */
    static of(element) {
      const preferences = [declaredLang(element), ...(navigator.languages || []), navigator.language];
      for (const tag of preferences) {
        const lang = primarySubtag(tag);
        if (lang && CATALOGUES[lang]) return new Speech(lang, intlLocale(tag, lang));
      }
      return new Speech(DEFAULT_LANG, DEFAULT_LANG);
    }

    /** The text of `key` with its `{name}` placeholders filled from `params`, as text. */
    say(key, params = {}) {
      const template = CATALOGUES[this.lang]?.[key] ?? CATALOGUES[DEFAULT_LANG]?.[key] ?? key;
      return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
    }

    /** An amount in major units, with its currency's own decimals (JPY none, EUR two). */
    money(amount, currency) {
      return new Intl.NumberFormat(this.locale, {style: 'currency', currency}).format(amount);
    }

    /** A price per a subscription's interval: "9,00 € / Monat". */
    perInterval(price, interval) {
      if (!interval) return price;
      return INTERVALS.has(interval) ? this.say(`price.per.${interval}`, {price}) : `${price} / ${interval}`;
    }

    date(iso) {
      const when = new Date(iso);
      return Number.isNaN(when.getTime()) ? String(iso) : new Intl.DateTimeFormat(this.locale, {dateStyle: 'long'}).format(when);
    }

    /** A country of an address, named in this language; the address's own text if not a code. */
    country(code) {
      if (!/^[A-Z]{2}$/.test(code || '')) return code;
      try {
        return new Intl.DisplayNames([this.locale], {type: 'region'}).of(code) || code;
      } catch {
        return code;
      }
    }

    /** A payment method's label: a provider's default in this language, the merchant's as chosen. */
    label(entry) {
      const [english, key] = DEFAULT_LABELS[entry.kind] || [];
      if (!english || typeof entry.label !== 'string') return entry.label;
      if (entry.label === english) return this.say(key);
      const named = entry.label.startsWith(english + ' (') && entry.label.endsWith(')');
      return named ? this.say(key) + entry.label.slice(english.length) : entry.label;
    }
  }

  // The node's address: where this script was loaded from (`.../button.js` or
  // `.../button/v1-<hash>.js`), unless an element names one with `base-url`.
  const SCRIPT_BASE = (() => {
    const src = document.currentScript && document.currentScript.src;
    if (!src) return '';
    const url = new URL(src);
    return url.origin + url.pathname.replace(/\/button(?:\/[^/]+)?\.js$/, '');
  })();

  /** A `tx_` id: a ULID (48-bit millisecond time, 80 random bits), 26 Crockford characters. */
  function newTxId(now = Date.now()) {
    let time = '';
    for (let i = 0; i < 10; i++) {
      time = CROCKFORD[now % 32] + time;
      now = Math.floor(now / 32);
    }
    let random = '';
    let bits = 0;
    let pending = 0;
    for (const byte of crypto.getRandomValues(new Uint8Array(10))) {
      pending = (pending << 8) | byte;
      bits += 8;
      while (bits >= 5) {
        bits -= 5;
        random += CROCKFORD[(pending >> bits) & 31];
      }
      pending &= (1 << bits) - 1;
    }
    return 'tx_' + time + random;
  }

  // -- talking to the node ---------------------------------------------------------------------

  /** fetch, read to the end; a failure on the way is `network_error` unless it was an abort. */
  async function exchange(url, init, signal) {
    try {
      const response = await fetch(url, {...init, mode: 'cors', credentials: 'omit', signal});
      return {response, bytes: await response.arrayBuffer()};
    } catch (cause) {
      if (signal.aborted) throw cause;
      throw new CmError('network_error', `${url} could not be reached.`, {cause, retryable: true});
    }
  }

  /** The service's error envelope (CONTRACT 7) as a CmError with the service's code. */
  function serviceError(response, bytes) {
    const details = {status: response.status, requestId: response.headers.get('Cm-Request-Id')};
    let envelope = null;
    try {
      envelope = JSON.parse(new TextDecoder().decode(bytes)).error;
    } catch {
      // Not the node's answer (a proxy's error page): treated as not reaching the node.
    }
    if (envelope && typeof envelope.code === 'string') {
      return new CmError(envelope.code, envelope.message || envelope.code, {
        ...details,
        retryable: Boolean(envelope.retryable),
      });
    }
    return new CmError('network_error', `The payment service answered HTTP ${response.status}.`, {
      ...details,
      retryable: response.status >= 500,
    });
  }

  function base64urlBytes(text) {
    return Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  }

  /** True when `Cm-Signature` is a valid signature of exactly `bytes` by a built-in key. */
  async function signatureHolds(response, bytes) {
    const fields = {};
    for (const part of (response.headers.get('Cm-Signature') || '').split(',')) {
      const [name, value] = part.trim().split('=');
      fields[name] = value;
    }
    const jwk = SIGNING_KEYS.find((key) => key.kid === fields.keyid);
    if (!jwk || !fields.sig || !crypto.subtle) return false; // crypto.subtle: https pages only
    try {
      const key = await crypto.subtle.importKey(
        'jwk', {kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y},
        {name: 'ECDSA', namedCurve: 'P-256'}, false, ['verify'],
      );
      const signature = base64urlBytes(fields.sig);
      return await crypto.subtle.verify({name: 'ECDSA', hash: 'SHA-256'}, key, signature, bytes);
    } catch {
      return false;
    }
  }

  async function fetchPublicInfo({baseUrl, project, product, mode, without}, signal) {
    const query = new URLSearchParams({mode});
    if (product) query.set('productId', product);
    const url = `${baseUrl}/api/projects/${encodeURIComponent(project)}/public-info?${query}`;
    const {response, bytes} = await exchange(url, {}, signal);
    if (response.status !== 200) throw serviceError(response, bytes);
    if (!(await signatureHolds(response, bytes))) {
      throw new CmError('signature_invalid', 'The public-info answer is not signed by the node.');
    }
    const info = JSON.parse(new TextDecoder().decode(bytes));
    // A signed body copied onto another address (a poisoned cache) must not pass either.
    if (info.projectId !== project || info.mode !== mode || (info.product?.id ?? '') !== product) {
      throw new CmError('signature_invalid', 'The signed public-info answers another request.');
    }
    // What the element leaves out (its `without`) is not offered; nor is a method whose
    // provider fails on its side just now (listed unavailable).
    const listed = info.providers.filter((entry) => !without.has(entry.provider));
    const offered = listed.filter((entry) => entry.available !== false);
    if (!offered.length) {
      const error = new CmError(
        'no_provider',
        listed.length
          ? 'No way to pay works just now: its provider does not answer. Try again in a few minutes.'
          : 'The project has no payment method enabled in this mode.',
      );
      if (listed.length) ALL_DOWN.add(error);
      throw error;
    }
    info.providers = offered;
    return info;
  }

  async function createCheckout({baseUrl, project}, payload, signal) {
    const url = `${baseUrl}/api/checkout/${encodeURIComponent(payload.provider)}/${encodeURIComponent(project)}`;
    const {provider, ...body} = payload;
    const {response, bytes} = await exchange(
      url,
      {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)},
      signal,
    );
    if (response.status !== 201) throw serviceError(response, bytes);
    return JSON.parse(new TextDecoder().decode(bytes));
  }

  /** Only web addresses are followed: a hand-off never runs `javascript:` or opens `data:`. */
  function webAddress(url) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      throw new CmError('unexpected_response', `Refusing to open ${parsed.protocol} address.`);
    }
    return parsed.href;
  }

  // -- building the shadow DOM (no innerHTML: every value lands as text) -------------------------

  function h(tag, props, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
      else element.setAttribute(name, value === true ? '' : String(value));
    }
    element.append(...children.flat().filter((child) => child !== null && child !== undefined));
    return element;
  }

  function icon(path) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('class', 'glyph');
    const shape = document.createElementNS(SVG_NS, 'path');
    shape.setAttribute('d', path);
    svg.append(shape);
    return svg;
  }

  const GLYPHS = {
    close: 'M6 6l12 12M18 6L6 18',
    lock: 'M7 11V8a5 5 0 0 1 10 0v3M5 11h14v10H5z',
    chevron: 'M9 6l6 6-6 6',
    copy: 'M9 9h11v11H9zM5 15H4V4h11v1',
  };

  const spinner = (part) => h('span', {class: 'spinner', part, 'aria-hidden': 'true'});

  // Adopted, not a <style> element: a page whose CSP forbids inline styles still styles the button.
  const STYLES = new CSSStyleSheet();
  STYLES.replaceSync(`
    :host {
      display: inline-block;
      --_accent: var(--cm-accent, #1d4ed8);
      --_on-accent: var(--cm-accent-contrast, #fff);
      --_surface: var(--cm-surface, #fff);
      --_text: var(--cm-text, #0f172a);
      --_muted: var(--cm-muted, #64748b);
      --_border: var(--cm-border, #e2e8f0);
      --_radius: var(--cm-radius, 0.5rem);
      /* the accent itself: a focus ring holds 3:1 against the surface it is drawn on (WCAG 1.4.11) */
      --_focus: var(--cm-focus-ring, var(--_accent));
    }
    :host([hidden]), [hidden] { display: none !important; }
    :focus-visible { outline: 3px solid var(--_focus); outline-offset: 2px; }
    .glyph { width: 1.125rem; height: 1.125rem; flex: none; fill: none; stroke: currentColor;
      stroke-width: 2; stroke-linecap: round; stroke-linejoin: round; }
    .spinner { display: inline-block; width: 1em; height: 1em; flex: none; border-radius: 50%;
      border: 2px solid currentColor; border-right-color: transparent;
      animation: cm-spin 0.7s linear infinite; }
    @keyframes cm-spin { to { transform: rotate(360deg); } }
    /* a buyer who asks for less motion gets none: the spinner stands still (the status line
       says what is going on), nothing fades */
    @media (prefers-reduced-motion: reduce) {
      .spinner { animation: none; }
      *, *::backdrop { transition: none !important; }
    }

    .action { display: inline-flex; align-items: center; justify-content: center; gap: 0.5em;
      min-height: 2.5rem; padding: 0.5em 1.25em; font: inherit; font-weight: 600; line-height: 1.2;
      color: var(--_on-accent); background: var(--_accent); border: 0; border-radius: var(--_radius);
      cursor: pointer; transition: filter 0.15s; }
    .action:hover { filter: brightness(1.1); }
    [part~="button"][aria-busy="true"] { cursor: progress; }
    .quiet { color: var(--_text); background: transparent; border: 1px solid var(--_border); }
    .quiet:hover { filter: none; background: color-mix(in srgb, var(--_text) 5%, transparent); }

    dialog { width: min(27rem, calc(100vw - 2rem)); max-height: calc(100dvh - 2rem); padding: 0;
      border: 0; border-radius: calc(var(--_radius) * 1.5); color: var(--_text);
      background: var(--_surface); box-shadow: 0 24px 64px -16px rgb(15 23 42 / 0.45);
      font-family: var(--cm-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
      font-size: 1rem; line-height: 1.5; }
    dialog::backdrop { background: var(--cm-backdrop, rgb(15 23 42 / 0.55)); }
    .panel { padding: 1.25rem 1.5rem 1.5rem; }
    header { display: flex; align-items: flex-start; gap: 0.75rem; padding-bottom: 1rem;
      margin-bottom: 1.25rem; border-bottom: 1px solid var(--_border); }
    .heading { flex: 1; min-width: 0; }
    h2 { margin: 0; font-size: 1.125rem; font-weight: 650; line-height: 1.35; }
    .price { margin: 0.125rem 0 0; color: var(--_muted); font-size: 0.9375rem;
      font-variant-numeric: tabular-nums; }
    .badge { margin-left: 0.5rem; padding: 0.0625rem 0.5rem; border-radius: 999px;
      background: #fef3c7; color: #92400e; font-size: 0.6875rem; font-weight: 700;
      letter-spacing: 0.05em; text-transform: uppercase; vertical-align: 0.125rem; }
    .close { display: grid; place-items: center; width: 2rem; height: 2rem; margin: -0.25rem -0.5rem 0 0;
      padding: 0; color: var(--_muted); background: transparent; border: 0; border-radius: 0.375rem;
      cursor: pointer; }
    .close:hover { color: var(--_text); background: color-mix(in srgb, var(--_text) 6%, transparent); }

    .prompt { margin: 0 0 0.75rem; color: var(--_muted); font-size: 0.875rem; font-weight: 500; }
    ul { display: grid; gap: 0.625rem; margin: 0; padding: 0; list-style: none; }
    .provider { display: flex; align-items: center; gap: 0.875rem; width: 100%;
      padding: 0.75rem 0.875rem; font: inherit; color: inherit; text-align: left;
      background: var(--_surface); border: 1px solid var(--_border); border-radius: var(--_radius);
      cursor: pointer; transition: border-color 0.15s, background 0.15s, box-shadow 0.15s; }
    .provider:hover { border-color: var(--_accent);
      box-shadow: 0 1px 2px rgb(15 23 42 / 0.06), 0 0 0 1px var(--_accent); }
    .provider[aria-disabled="true"] { cursor: default; opacity: 0.55; }
    .provider[aria-busy="true"] { opacity: 1; border-color: var(--_accent); }
    .tile { display: grid; place-items: center; width: 2.5rem; height: 2.5rem; flex: none;
      border-radius: calc(var(--_radius) * 0.75); background: color-mix(in srgb, var(--_accent) 9%, var(--_surface)); }
    .tile img { width: 1.375rem; height: 1.375rem; }
    .label { flex: 1; min-width: 0; font-weight: 600; }
    .amount { color: var(--_muted); font-variant-numeric: tabular-nums; }
    .provider .glyph { color: var(--_muted); }
    footer { display: flex; align-items: center; justify-content: center; gap: 0.375rem;
      margin-top: 1.25rem; color: var(--_muted); font-size: 0.8125rem; }
    footer .glyph { width: 0.875rem; height: 0.875rem; }

    .status { display: flex; align-items: center; justify-content: center; gap: 0.75rem;
      padding: 1.5rem 0; color: var(--_muted); }
    .status .spinner { width: 1.25rem; height: 1.25rem; color: var(--_accent); }
    .error { margin: 0; padding: 0.875rem 1rem; color: #991b1b; background: #fef2f2;
      border: 1px solid #fecaca; border-radius: var(--_radius); }
    .actions { display: flex; justify-content: flex-end; gap: 0.5rem; margin-top: 1.25rem; }

    .lead { margin: 0 0 1rem; }
    .reference { display: flex; flex-wrap: wrap; align-items: center; gap: 0.75rem; padding: 0.75rem 0.75rem 0.75rem 1rem;
      border: 1px dashed color-mix(in srgb, var(--_accent) 45%, var(--_border));
      border-radius: var(--_radius); background: color-mix(in srgb, var(--_accent) 5%, var(--_surface)); }
    /* one line always: a code broken at its hyphens reads as two codes (the copy button wraps
       under it instead, and the size shrinks with a narrow window) */
    .code { flex: 1 0 auto; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
      font-size: clamp(1rem, 5.2vw, 1.25rem); font-weight: 700; letter-spacing: 0.06em;
      white-space: nowrap; user-select: all; }
    .copy { min-height: 2.125rem; padding: 0.25rem 0.75rem; font-size: 0.875rem; }
    .copy .glyph { width: 1rem; height: 1rem; }
    dl { display: grid; grid-template-columns: auto 1fr; gap: 0.5rem 1.25rem; margin: 1.25rem 0 0; }
    dt { color: var(--_muted); font-size: 0.875rem; padding-top: 0.0625rem; }
    dd { margin: 0; }
    address { font-style: normal; }
    .note { margin: 1.25rem 0 0; color: var(--_muted); font-size: 0.875rem; }
  `);

  /**
   * A buy button. A click opens a payment window (a modal dialog) that lists the project's
   * payment methods from the node's signed public-info, starts the checkout the buyer picks and
   * hands the buyer over to it. There is no success event: the merchant's server learns of the
   * payment from the status endpoint or its event feed.
   *
   * @attr project - the project id, `prj_...` (property `project`)
   * @attr product - the product id (property `product`)
   * @attr customer-ref - the merchant's buyer reference, sent as `metadata.customerRef`
   *   (property `customerRef`)
   * @attr mode - `live` (default) or `test` (property `mode`)
   * @attr without - provider ids this element does not offer, separated by commas or spaces
   *   (property `without`, a Set): e.g. `paddle` on a page that opens no hosted card form
   * @attr quantity - how many, 1 to 100 (default 1; payments only), sent as the checkout's
   *   `quantity`; the window shows the prices for that many (property `quantity`)
   * @attr base-url - the node's address when the script is not loaded from the node
   *   (property `baseUrl`)
   *
   * @property cardForm - `({provider, txId, token, publishableKey, mode, amount, currency}) => any`:
   *   opens a hosted card form (Paddle.js) for a `token` checkout; without it picking such a
   *   provider ends in `cm-error` with code `card_form_unavailable`, before any checkout is made.
   *
   * @event cm-busy - a click started processing; the button is locked. `preventDefault()` hides
   *   the built-in spinner; the lock holds regardless.
   * @event cm-load-providers - the window is about to fetch the payment methods.
   *   `preventDefault()`: it does not; it closes and `cm-idle` follows (the page takes over).
   * @event cm-checkout-started - `{provider, kind, txId, productId}`: the buyer picked a method.
   *   `preventDefault()`: no checkout is created, the window shows the list again, `cm-idle`
   *   follows.
   * @event cm-error - `{error}`: a CmError whose `code` is `network_error`, `signature_invalid`,
   *   `no_provider` or the service's error code. `preventDefault()` suppresses the built-in
   *   message (the window closes instead).
   * @event cm-idle - processing settled; exactly one follows every `cm-busy`.
   *
   * @csspart button - the buy button; `spinner` - its spinner; `label` - its label
   * @csspart dialog - the payment window; `panel`, `header`, `title`, `price`, `badge`, `close`
   * @csspart provider - a payment method; `provider-icon`, `provider-label`, `provider-amount`
   * @csspart reference - the pay-by-mail reference box; `code`, `copy`, `address`
   * @csspart error - the built-in error message; `status` - a progress line
   *
   * @cssproperty --cm-accent, --cm-accent-contrast, --cm-surface, --cm-text, --cm-muted,
   *   --cm-border, --cm-radius, --cm-font, --cm-backdrop, --cm-focus-ring
   */
  class CmButton extends HTMLElement {
    static define(tag = 'cm-button', registry = customElements) {
      if (!registry.get(tag)) registry.define(tag, this);
      return this;
    }

    #cardForm = null;

    #busy = false; // the double-click lock: one processing run at a time
    #session = null; // AbortController of the open window; aborting it drops late answers
    #info = null; // the verified public-info the window shows
    #checkoutPending = false;
    #speech = new Speech(DEFAULT_LANG, DEFAULT_LANG); // the buyer's language, found anew at each click
    #buyLabel;
    #close;
    #button;
    #spinner;
    #dialog;
    #title;
    #price;
    #body;

    constructor() {
      super();
      // A page may set cardForm before this script defines the element; an own property set
      // then would hide the accessor, so take its value over.
      if (Object.prototype.hasOwnProperty.call(this, 'cardForm')) {
        const early = this.cardForm;
        delete this.cardForm;
        this.cardForm = early;
      }
      const root = this.attachShadow({mode: 'open', delegatesFocus: true});
      root.adoptedStyleSheets = [STYLES];
      this.#spinner = h('span', {class: 'spinner', part: 'spinner', 'aria-hidden': 'true', hidden: true});
      this.#button = h(
        'button',
        {type: 'button', class: 'action', part: 'button', onclick: () => this.#start()},
        this.#spinner,
        // the page's own label, else the buyer's word for it
        h('span', {part: 'label'}, h('slot', {}, (this.#buyLabel = h('span', {}, 'Buy')))),
      );
      this.#title = h('h2', {id: 'title', part: 'title'}, 'Payment');
      this.#close = h(
        'button',
        {type: 'button', class: 'close', part: 'close', 'aria-label': 'Close', onclick: () => this.#closeWindow()},
        icon(GLYPHS.close),
      );
      this.#price = h('p', {class: 'price', part: 'price'});
      this.#body = h('div', {class: 'body'});
      this.#dialog = h(
        'dialog',
        {
          part: 'dialog',
          'aria-labelledby': 'title',
          // A close event queued before the window was opened again is stale.
          onclose: () => this.#dialog.open || this.#onClosed(),
          onkeydown: (event) => this.#trapFocus(event),
        },
        h(
          'div',
          {class: 'panel', part: 'panel'},
          h(
            'header',
            {part: 'header'},
            h('div', {class: 'heading'}, this.#title, this.#price),
            this.#close,
          ),
          this.#body,
        ),
      );
      root.append(this.#button, this.#dialog);
    }

    get project() { return this.getAttribute('project') || ''; }
    set project(value) { this.setAttribute('project', value); }
    get product() { return this.getAttribute('product') || ''; }
    set product(value) { this.setAttribute('product', value); }
    get customerRef() { return this.getAttribute('customer-ref') || ''; }
    set customerRef(value) { this.setAttribute('customer-ref', value); }
    get mode() { return this.getAttribute('mode') === 'test' ? 'test' : 'live'; }
    get without() { return new Set((this.getAttribute('without') || '').split(/[\s,]+/).filter(Boolean)); }
    set without(value) { this.setAttribute('without', [...value].join(',')); }
    set mode(value) { this.setAttribute('mode', value); }
    get quantity() {
      const count = Number(this.getAttribute('quantity') || 1);
      return Number.isInteger(count) && count >= 1 && count <= 100 ? count : 1;
    }
    set quantity(value) { this.setAttribute('quantity', String(value)); }
    get baseUrl() { return (this.getAttribute('base-url') || SCRIPT_BASE).replace(/\/+$/, ''); }
    set baseUrl(value) { this.setAttribute('base-url', value); }

    /** The hosted card form hook for `token` checkouts (see the class comment). */
    get cardForm() {
      return this.#cardForm;
    }

    set cardForm(hook) {
      this.#cardForm = hook;
    }

    connectedCallback() {
      this.#speak();
    }

    disconnectedCallback() {
      if (this.#dialog.open) this.#closeWindow();
    }

    // -- the run: cm-busy ... cm-idle ----------------------------------------------------------

    #emit(name, detail = {}) {
      return this.dispatchEvent(new CustomEvent(name, {...EVENT_OPTIONS, detail}));
    }

    #lock() {
      this.#busy = true;
      this.#button.setAttribute('aria-busy', 'true');
      this.#spinner.hidden = !this.#emit('cm-busy');
    }

    #settle() {
      if (!this.#busy) return;
      this.#busy = false;
      this.#button.removeAttribute('aria-busy');
      this.#spinner.hidden = true;
      this.#emit('cm-idle');
    }

    // The buyer's language as the page says it now (a page may switch it): the button's own
    // label and the window's fixed words; the window carries it, as it may differ from the page's.
    #speak() {
      const speech = Speech.of(this);
      this.#speech = speech;
      this.#buyLabel.textContent = speech.say('button.buy');
      this.#buyLabel.lang = speech.locale;
      this.#dialog.lang = speech.locale;
      this.#close.setAttribute('aria-label', speech.say('window.close'));
      return speech;
    }

    async #start() {
      if (this.#busy) return;
      this.#lock();
      const session = new AbortController();
      this.#session = session;
      this.#info = null;
      const speech = this.#speak();
      this.#title.textContent = speech.say('window.title');
      this.#price.replaceChildren();
      this.#showStatus(speech.say('window.loading'));
      this.#dialog.showModal();
      if (!this.#emit('cm-load-providers')) {
        this.#closeWindow();
        return;
      }
      try {
        if (!this.project || !this.product) {
          throw new CmError('missing_attribute', 'cm-button needs its project and product attributes.');
        }
        this.#info = await fetchPublicInfo(this, session.signal);
        if (session.signal.aborted) return;
        this.#showHeader();
        this.#showList();
      } catch (error) {
        if (!session.signal.aborted) this.#fail(error);
      }
    }

    async #choose(entry, choice) {
      if (this.#checkoutPending) return;
      // After a prevented cm-checkout-started the run settled; a new pick is a new run.
      if (!this.#busy) this.#lock();
      const session = this.#session;
      const txId = newTxId();
      const detail = {provider: entry.provider, kind: entry.kind, txId, productId: this.product};
      if (!this.#emit('cm-checkout-started', detail)) {
        this.#showList();
        this.#settle();
        return;
      }
      // after the event (a listener may set cardForm, loading Paddle.js only when it is picked)
      // and before any checkout is made: nothing is left pending at the node or the provider
      if (TOKEN_HANDOFF.has(entry.provider) && typeof this.cardForm !== 'function') {
        this.#fail(new CmError('card_form_unavailable', 'Set cardForm on the element to open the hosted card form.'));
        return;
      }
      this.#checkoutPending = true;
      this.#markChoice(choice);
      const payload = {provider: entry.provider, productId: this.product, txId, mode: this.mode};
      if (this.customerRef) payload.metadata = {customerRef: this.customerRef};
      if (this.quantity > 1) payload.quantity = this.quantity;
      try {
        const answer = await createCheckout(this, payload, session.signal);
        if (!session.signal.aborted) await this.#handOff(answer, entry);
      } catch (error) {
        if (!session.signal.aborted) this.#fail(error);
      } finally {
        this.#checkoutPending = false;
      }
    }

    async #handOff(answer, entry) {
      switch (answer.type) {
        case 'redirect': {
          this.#showStatus(this.#say('handoff.redirect', {provider: this.#speech.label(entry)}));
          window.location.assign(webAddress(answer.url));
          break;
        }
        case 'approval': {
          const url = webAddress(answer.url);
          // The popup keeps its opener: the node's return page in it sends this window on
          // (the success address, or a page that says what went wrong) and closes itself.
          const popup = window.open(url, 'cm-approval', 'popup,width=480,height=720');
          if (popup) {
            this.#showMessage(this.#say('handoff.popup', {provider: this.#speech.label(entry)}));
            this.#watchPopup(popup, entry);
          } else {
            this.#showStatus(this.#say('handoff.redirect', {provider: this.#speech.label(entry)}));
            window.location.assign(url);
          }
          break;
        }
        case 'token': {
          if (typeof this.cardForm !== 'function') {
            throw new CmError('card_form_unavailable', 'Set cardForm on the element to open the hosted card form.');
          }
          const {provider, txId, token, publishableKey, amount, currency} = answer;
          await this.cardForm({provider, txId, token, publishableKey, mode: this.mode, amount, currency});
          this.#closeWindow();
          break;
        }
        case 'reference':
          this.#showReference(answer, entry);
          break;
        default:
          throw new CmError('unexpected_response', `Unknown checkout type ${answer.type}.`);
      }
      this.#settle();
    }

    // The return page posts `cm-returned` before it sends this window on; a popup that closes
    // without it was closed by the buyer, who is offered the payment options again.
    #watchPopup(popup, entry) {
      const session = this.#session;
      const baseOrigin = new URL(this.baseUrl || window.location.href, window.location.href).origin;
      let returning = false;
      const onMessage = (event) => {
        if (event.source !== popup || event.origin !== baseOrigin) return;
        if (event.data && event.data.type === 'cm-returned') {
          returning = true;
          this.#showStatus(this.#say('handoff.returning'));
        }
      };
      window.addEventListener('message', onMessage);
      const timer = setInterval(() => {
        if (session.signal.aborted || popup.closed) {
          clearInterval(timer);
          window.removeEventListener('message', onMessage);
          if (!session.signal.aborted && !returning) this.#showPopupClosed(entry);
        }
      }, 300);
      session.signal.addEventListener('abort', () => {
        clearInterval(timer);
        window.removeEventListener('message', onMessage);
      });
    }

    #fail(error) {
      const failure = error instanceof CmError
        ? error
        : new CmError('internal', String(error && error.message || error), {cause: error});
      if (this.#emit('cm-error', {error: failure})) {
        this.#showError(failure);
      } else {
        this.#closeWindow();
      }
      this.#settle();
    }

    #closeWindow() {
      if (this.#dialog.open) this.#dialog.close();
      this.#onClosed();
    }

    // Every way the window closes (Escape, the close button, a hand-off) ends up here, at once:
    // the dialog's own close event comes a task later. Safe to run twice.
    #onClosed() {
      this.#session?.abort();
      this.#session = null;
      this.#checkoutPending = false;
      this.#settle();
      this.#button.focus();
    }

    // showModal() already makes the page inert; this keeps Tab cycling inside the window
    // instead of leaving for the browser's own controls.
    #trapFocus(event) {
      if (event.key !== 'Tab') return;
      const focusable = [...this.#dialog.querySelectorAll('button, [href], [tabindex]:not([tabindex="-1"])')]
        .filter((element) => !element.closest('[hidden]'));
      if (!focusable.length) return;
      const first = focusable[0];
      const last = focusable[focusable.length - 1];
      const active = this.shadowRoot.activeElement;
      if (event.shiftKey ? active === first : active === last) {
        event.preventDefault();
        (event.shiftKey ? last : first).focus();
      }
    }

    // -- what the window shows -------------------------------------------------------------------

    #say(key, params) {
      return this.#speech.say(key, params);
    }

    // A subscription's price is per its interval: "€9.00 / month", wherever it is shown.
    #priced(amount, currency) {
      return this.#speech.perInterval(this.#speech.money(amount, currency), this.#info?.product?.interval);
    }

    #show(...children) {
      this.#body.replaceChildren(...children);
    }

    #showHeader() {
      const {product, mode} = this.#info;
      this.#title.textContent = product.name;
      this.#price.replaceChildren(this.#priced(product.amount * this.quantity, product.currency));
      if (mode === 'test') this.#price.append(h('span', {class: 'badge', part: 'badge'}, this.#say('window.test_mode')));
    }

    #showStatus(text) {
      this.#show(h('div', {class: 'status', part: 'status', role: 'status'}, spinner(), text));
    }

    #showList() {
      const items = this.#info.providers.map((entry) => {
        const choice = h(
          'button',
          {type: 'button', class: 'provider', part: 'provider', onclick: () => this.#choose(entry, choice)},
          h('span', {class: 'tile'}, h('img', {part: 'provider-icon', src: entry.icon, alt: '', width: 22, height: 22})),
          h('span', {class: 'label', part: 'provider-label'}, this.#speech.label(entry)),
          entry.amount === undefined ? null : h('span', {class: 'amount', part: 'provider-amount'}, this.#priced(entry.amount * this.quantity, entry.currency)),
          icon(GLYPHS.chevron),
        );
        return h('li', {}, choice);
      });
      this.#show(
        h('p', {class: 'prompt', id: 'prompt'}, this.#say('list.prompt')),
        h('ul', {'aria-labelledby': 'prompt'}, items),
        h('footer', {}, icon(GLYPHS.lock), this.#say('list.verified')),
      );
      this.#body.querySelector('.provider').focus();
    }

    #markChoice(choice) {
      for (const other of this.#body.querySelectorAll('.provider')) other.setAttribute('aria-disabled', 'true');
      choice.setAttribute('aria-busy', 'true');
      choice.lastElementChild.replaceWith(spinner());
    }

    #showReference(answer, entry) {
      const speech = this.#speech;
      const address = answer.mailingAddress || {lines: []};
      const lines = [address.name, ...(address.lines || []), speech.country(address.country)];
      const copied = h('span', {'aria-live': 'polite'}, speech.say('reference.copy'));
      const code = h('span', {class: 'code', part: 'code', id: 'reference-code'}, answer.reference);
      // focus lands on Copy: a screen reader says the group's name, the button's and the code
      const copy = h(
        'button',
        {type: 'button', class: 'action quiet copy', part: 'copy', 'aria-describedby': 'reference-code', onclick: () => this.#copy(code, copied)},
        icon(GLYPHS.copy),
        copied,
      );
      const due = answer.expiresAt
        ? [h('dt', {}, speech.say('reference.pay_by')), h('dd', {class: 'due-date'}, h('time', {datetime: answer.expiresAt}, speech.date(answer.expiresAt)))]
        : [];
      this.#show(
        h('p', {class: 'lead'}, speech.say('reference.lead', {provider: speech.label(entry)})),
        h('div', {class: 'reference', part: 'reference', role: 'group', 'aria-label': speech.say('reference.code')}, code, copy),
        h(
          'dl',
          {},
          h('dt', {}, speech.say('reference.amount')),
          h('dd', {class: 'amount-due'}, speech.money(answer.amount, answer.currency)),
          ...due,
          h('dt', {}, speech.say('reference.send_to')),
          h('dd', {}, h('address', {part: 'address'}, lines.filter(Boolean).map((line) => h('div', {}, line)))),
        ),
        h('p', {class: 'note'}, speech.say('reference.note')),
        h('div', {class: 'actions'}, h('button', {type: 'button', class: 'action', onclick: () => this.#closeWindow()}, speech.say('action.done'))),
      );
      copy.focus();
    }

    async #copy(code, state) {
      try {
        await navigator.clipboard.writeText(code.textContent);
        state.textContent = this.#say('reference.copied');
      } catch {
        // No clipboard permission: select the code so the buyer can copy it by hand.
        getSelection().selectAllChildren(code);
        state.textContent = this.#say('reference.copy_by_hand');
      }
    }

    #closeButton(quiet = true) {
      return h('button', {type: 'button', class: quiet ? 'action quiet' : 'action', onclick: () => this.#closeWindow()}, this.#say('action.close'));
    }

    #showMessage(text) {
      this.#show(h('p', {class: 'lead', role: 'status'}, text), h('div', {class: 'actions'}, this.#closeButton()));
    }

    #showPopupClosed(entry) {
      const again = h('button', {type: 'button', class: 'action', onclick: () => this.#showList()}, this.#say('action.choose_again'));
      this.#show(
        h('p', {class: 'lead', role: 'status'}, this.#say('handoff.popup_closed', {provider: this.#speech.label(entry)})),
        h('div', {class: 'actions'}, this.#closeButton(), again),
      );
      again.focus();
    }

    /** The catalogue key of what the buyer is told about `error`. */
    #buyerMessage(error) {
      // the provider refused the shop's own set-up (retryable: false): waiting will not help
      if (error.code === 'provider_error' && !error.retryable) return 'error.refused';
      if (ALL_DOWN.has(error)) return 'error.providers_down';
      return EXPLAINED.has(error.code) ? `error.${error.code}` : 'error.fallback';
    }

    #showError(error) {
      const close = this.#closeButton();
      this.#show(
        h('p', {class: 'error', part: 'error', role: 'alert'}, this.#say(this.#buyerMessage(error))),
        h('div', {class: 'actions'}, close),
      );
      close.focus();
    }
  }

  window.CmButton = CmButton;
  CmButton.define();
})();

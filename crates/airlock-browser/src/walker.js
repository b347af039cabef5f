// Airlock's in-page helper. Runs in an isolated world (Page.createIsolatedWorld), so
// page scripts can neither see it nor patch the DOM prototypes it uses. It computes
// roles and accessible names the way Chromium's accessibility tree does (HTML-AAM +
// accname), assigns stable refs (a WeakMap keyed by node, numbers never reused in a
// tab), and answers the browser layer's questions in one round trip each.
(() => {
  if (globalThis.__airlock) return 'present';

  const refOf = new WeakMap();
  const byRef = new Map();
  let nextRef = 1;
  // Longest name, value or description sent to Airlock. Airlock redacts what it gets
  // and then cuts it much shorter; this cut sits far enough beyond that (the session's
  // redactor says how far) that it can never split a secret Airlock must recognise.
  let maxCut = 400;
  // How long a loaded page must stay still before waiting for a target is given up.
  const IDLE_MS = 1000;
  // Diagnostics only: give every emitted element a ref so tests can compare each one
  // with Chromium's own accessibility tree.
  let refAll = false;

  const INTERACTIVE = new Set([
    'button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox',
    'option', 'slider', 'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'treeitem', 'Date', 'DateTime', 'InputTime', 'DisclosureTriangle',
    'ColorWell', 'scrollbar', 'gridcell',
  ]);
  // Roles whose accessible name comes from their content (accname "name from content").
  const NAME_FROM_CONTENT = new Set([
    'button', 'cell', 'checkbox', 'columnheader', 'gridcell', 'heading', 'link', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'radio', 'row', 'rowheader', 'switch',
    'tab', 'tooltip', 'treeitem', 'term', 'DisclosureTriangle',
  ]);
  const ARIA_ROLES = new Set([
    'alert', 'alertdialog', 'application', 'article', 'banner', 'blockquote', 'button',
    'caption', 'cell', 'checkbox', 'code', 'columnheader', 'combobox', 'complementary',
    'contentinfo', 'definition', 'deletion', 'dialog', 'directory', 'document', 'emphasis',
    'feed', 'figure', 'form', 'generic', 'grid', 'gridcell', 'group', 'heading', 'image',
    'img', 'insertion', 'link', 'list', 'listbox', 'listitem', 'log', 'main', 'mark',
    'marquee', 'math', 'menu', 'menubar', 'menuitem', 'menuitemcheckbox', 'menuitemradio',
    'meter', 'navigation', 'none', 'note', 'option', 'paragraph', 'presentation',
    'progressbar', 'radio', 'radiogroup', 'region', 'row', 'rowgroup', 'rowheader',
    'scrollbar', 'search', 'searchbox', 'separator', 'slider', 'spinbutton', 'status',
    'strong', 'subscript', 'superscript', 'switch', 'tab', 'table', 'tablist', 'tabpanel',
    'term', 'textbox', 'time', 'timer', 'toolbar', 'tooltip', 'tree', 'treegrid', 'treeitem',
  ]);
  // Elements that never render content of their own.
  const SKIP_TAGS = new Set([
    'script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title', 'datalist',
    'base', 'param', 'source', 'track',
  ]);

  const collapse = (s) => s.replace(/[\s\u00a0]+/g, ' ');

  function refFor(el) {
    let n = refOf.get(el);
    if (n === undefined) {
      n = nextRef++;
      refOf.set(el, n);
      byRef.set(n, new WeakRef(el));
    }
    return n;
  }

  function elementByRef(n) {
    const weak = byRef.get(n);
    const el = weak && weak.deref();
    return el && el.isConnected ? el : null;
  }

  // ---- visibility -------------------------------------------------------------------

  // Hidden for the accessibility tree: display:none (whole subtree), aria-hidden,
  // inert, closed <details> content. visibility:hidden hides the element itself but a
  // child may be visible again, so that is checked per node (`selfHidden`).
  function subtreeHidden(el, style) {
    if (el.getAttribute('aria-hidden') === 'true') return true;
    if (el.inert) return true;
    if (style.display === 'none') return true;
    if (style.display === 'contents') return false;
    return false;
  }

  function selfHidden(style) {
    return style.visibility === 'hidden' || style.visibility === 'collapse';
  }

  function isHiddenForAx(el) {
    for (let n = el; n; n = parentElementComposed(n)) {
      if (n.getAttribute && n.getAttribute('aria-hidden') === 'true') return true;
      if (n.inert) return true;
    }
    if (!el.checkVisibility({ visibilityProperty: true })) {
      // checkVisibility is false for display:contents too; those still count.
      const style = getComputedStyle(el);
      if (style.display !== 'contents') return true;
    }
    return false;
  }

  function parentElementComposed(n) {
    if (n.parentElement) return n.parentElement;
    const root = n.parentNode;
    return root && root.host ? root.host : null;
  }

  // ---- roles ------------------------------------------------------------------------

  function explicitRole(el) {
    const attr = el.getAttribute('role');
    if (!attr) return null;
    for (const token of attr.trim().toLowerCase().split(/\s+/)) {
      if (ARIA_ROLES.has(token)) return token === 'img' ? 'image' : token;
    }
    return null;
  }

  function isFocusable(el) {
    return el.tabIndex >= 0 || el.hasAttribute('tabindex') || el.isContentEditable;
  }

  function hasGlobalAria(el) {
    for (const a of el.getAttributeNames()) {
      if (a === 'aria-label' || a === 'aria-labelledby' || a === 'aria-describedby') return true;
    }
    return false;
  }

  function roleOf(el) {
    let role = explicitRole(el);
    if (role === 'none' || role === 'presentation') {
      // Presentational roles are ignored on focusable elements (ARIA conflict rule).
      role = isFocusable(el) ? null : 'none';
    }
    if (role) return role;
    return implicitRole(el);
  }

  function inputRole(el) {
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    const hasList = el.hasAttribute('list');
    switch (type) {
      case 'button': case 'submit': case 'reset': case 'image': case 'file': return 'button';
      case 'checkbox': return el.getAttribute('switch') !== null ? 'switch' : 'checkbox';
      case 'radio': return 'radio';
      case 'range': return 'slider';
      case 'number': return 'spinbutton';
      case 'hidden': return 'none';
      case 'color': return 'ColorWell';
      case 'date': return 'Date';
      case 'datetime-local': return 'DateTime';
      case 'time': return 'InputTime';
      case 'month': case 'week': return 'DateTime';
      case 'search': return hasList ? 'combobox' : 'searchbox';
      default: return hasList ? 'combobox' : 'textbox';
    }
  }

  function landmarkScoped(el) {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const t = p.localName;
      if (t === 'article' || t === 'aside' || t === 'main' || t === 'nav' || t === 'section') return true;
      const r = p.getAttribute('role');
      if (r === 'article' || r === 'complementary' || r === 'main' || r === 'navigation' || r === 'region') return true;
    }
    return false;
  }

  function tableKind(el) {
    const table = el.closest('table');
    if (!table) return 'table';
    const r = table.getAttribute('role');
    return r === 'grid' || r === 'treegrid' ? 'grid' : 'table';
  }

  function implicitRole(el) {
    const tag = el.localName;
    switch (tag) {
      case 'a': return el.hasAttribute('href') ? 'link' : 'none';
      case 'area': return el.hasAttribute('href') ? 'link' : 'none';
      case 'button': return 'button';
      case 'input': return inputRole(el);
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'option': return 'option';
      case 'optgroup': return 'group';
      case 'textarea': return 'textbox';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'dl': return 'DescriptionList';
      case 'dt': return 'term';
      case 'dd': return 'definition';
      case 'table': return 'table';
      case 'thead': case 'tfoot': return 'rowgroup';
      case 'tbody': return 'none';
      case 'tr': return 'row';
      case 'td': return tableKind(el) === 'grid' ? 'gridcell' : 'cell';
      case 'th': return el.getAttribute('scope') === 'row' ? 'rowheader' : 'columnheader';
      case 'caption': return 'caption';
      case 'form': return 'form';
      case 'nav': return 'navigation';
      case 'main': return 'main';
      case 'header': return landmarkScoped(el) ? 'generic' : 'banner';
      case 'footer': return landmarkScoped(el) ? 'generic' : 'contentinfo';
      case 'aside': return 'complementary';
      case 'section': return hasGlobalAria(el) || el.hasAttribute('title') ? 'region' : 'generic';
      case 'article': return 'article';
      case 'search': return 'search';
      case 'img': {
        const alt = el.getAttribute('alt');
        return alt === '' && !el.getAttribute('title') && !hasGlobalAria(el) ? 'none' : 'image';
      }
      case 'svg': return hasGlobalAria(el) || el.querySelector(':scope > title') ? 'image' : 'none';
      case 'p': return 'paragraph';
      case 'blockquote': return 'blockquote';
      case 'figure': return 'figure';
      case 'figcaption': return 'Figcaption';
      case 'dialog': return 'dialog';
      case 'details': return 'group';
      case 'summary': return 'DisclosureTriangle';
      case 'hr': return 'separator';
      case 'progress': return 'progressbar';
      case 'meter': return 'meter';
      case 'output': return 'status';
      case 'fieldset': return 'group';
      case 'legend': return 'Legend';
      case 'label': {
        // Chromium drops a checkbox's or radio's label: its text is the control's name.
        const control = el.control;
        if (control && control.localName === 'input' && (control.type === 'checkbox' || control.type === 'radio')) return 'none';
        return 'LabelText';
      }
      case 'iframe': case 'frame': return 'Iframe';
      case 'code': return 'code';
      case 'em': return 'emphasis';
      case 'strong': return 'strong';
      case 'del': case 's': return 'deletion';
      case 'ins': return 'insertion';
      case 'sub': return 'subscript';
      case 'sup': return 'superscript';
      case 'mark': return 'mark';
      case 'time': return 'time';
      case 'br': return 'LineBreak';
      case 'html': case 'body': return 'none';
      case 'div': case 'pre': case 'address': case 'hgroup': return 'generic';
      default: return 'none';
    }
  }

  // ---- accessible names (accname 1.2, as Chromium applies it) -------------------------

  function textAlternative(el, role, visiting) {
    const labelledby = el.getAttribute('aria-labelledby');
    if (labelledby && !visiting.has(el)) {
      const parts = [];
      for (const id of labelledby.trim().split(/\s+/)) {
        const target = el.ownerDocument.getElementById(id);
        if (target) {
          visiting.add(el);
          parts.push(contentText(target, new Set(visiting).add(target), true));
        }
      }
      const joined = collapse(parts.join(' ')).trim();
      if (joined) return joined;
    }
    const label = el.getAttribute('aria-label');
    if (label && label.trim()) return collapse(label).trim();

    const native = nativeName(el, role, visiting);
    if (native) return native;

    if (NAME_FROM_CONTENT.has(role) && !(role === 'row' && tableKind(el) !== 'grid')) {
      const text = collapse(contentText(el, visiting, false)).trim();
      if (text) return text;
    }
    const title = el.getAttribute('title');
    if (title && title.trim()) return collapse(title).trim();
    if (el.localName === 'input' || el.localName === 'textarea') {
      const ph = el.getAttribute('placeholder') || el.getAttribute('aria-placeholder');
      if (ph && ph.trim()) return collapse(ph).trim();
    }
    return '';
  }

  // `el.labels` scans the whole document on each first access and its cache dies with
  // every DOM change: on a 2,000-row table that was a second per snapshot. One map per
  // tree scope per walk instead, built from each label's (cheap) `control`.
  let labelMaps = new Map();
  function labelsOf(el) {
    if (!('labels' in el)) return [];
    const root = el.getRootNode();
    let map = labelMaps.get(root);
    if (!map) {
      map = new Map();
      for (const label of root.querySelectorAll('label')) {
        const control = label.control;
        if (!control) continue;
        const list = map.get(control);
        if (list) list.push(label); else map.set(control, [label]);
      }
      labelMaps.set(root, map);
    }
    return map.get(el) || [];
  }

  function labelsText(el, visiting) {
    const labels = labelsOf(el);
    if (labels.length === 0) return '';
    const parts = [];
    for (const label of labels) {
      if (visiting.has(label)) continue;
      parts.push(contentText(label, new Set(visiting).add(label).add(el), true));
    }
    return collapse(parts.join(' ')).trim();
  }

  function nativeName(el, role, visiting) {
    const tag = el.localName;
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (type === 'button' || type === 'submit' || type === 'reset') {
        const fromLabel = labelsText(el, visiting);
        if (fromLabel) return fromLabel;
        const value = el.getAttribute('value');
        if (value !== null && value.trim()) return collapse(value).trim();
        if (type === 'submit') return 'Submit';
        if (type === 'reset') return 'Reset';
        return '';
      }
      if (type === 'image') {
        const alt = el.getAttribute('alt');
        if (alt && alt.trim()) return collapse(alt).trim();
        return 'Submit';
      }
      return labelsText(el, visiting);
    }
    if (tag === 'textarea' || tag === 'select' || tag === 'meter' || tag === 'progress' || tag === 'output') {
      return labelsText(el, visiting);
    }
    if (tag === 'button') {
      const fromLabel = labelsText(el, visiting);
      if (fromLabel) return fromLabel;
      return '';
    }
    if (tag === 'img' || tag === 'area') {
      const alt = el.getAttribute('alt');
      return alt ? collapse(alt).trim() : '';
    }
    if (tag === 'svg') {
      const t = el.querySelector(':scope > title');
      return t ? collapse(t.textContent).trim() : '';
    }
    if (tag === 'table') {
      const caption = el.querySelector(':scope > caption');
      return caption ? collapse(contentText(caption, visiting, false)).trim() : '';
    }
    if (tag === 'fieldset') {
      const legend = el.querySelector(':scope > legend');
      return legend ? collapse(contentText(legend, visiting, false)).trim() : '';
    }
    if (tag === 'figure') {
      return '';
    }
    if (tag === 'iframe') {
      const t = el.getAttribute('title');
      return t ? collapse(t).trim() : '';
    }
    return '';
  }

  // Text of a subtree for name computation. `recursing` is true when called for a
  // label or labelledby target, where embedded controls contribute their value.
  function contentText(node, visiting, recursing) {
    let out = '';
    forEachChild(node, (child) => {
      if (child.nodeType === Node.TEXT_NODE) {
        out += child.data;
        return;
      }
      if (child.nodeType !== Node.ELEMENT_NODE) return;
      if (SKIP_TAGS.has(child.localName)) return;
      if (visiting.has(child)) return;
      const style = getComputedStyle(child);
      if (subtreeHidden(child, style)) return;
      const role = roleOf(child);
      let piece;
      if (child.localName === 'input' || child.localName === 'textarea' || child.localName === 'select') {
        piece = embeddedControlText(child, role, visiting);
      } else if (child.localName === 'br') {
        piece = ' ';
      } else {
        const aria = child.getAttribute('aria-label');
        if (aria && aria.trim()) {
          piece = aria;
        } else if (child.localName === 'img' || child.localName === 'svg' || child.localName === 'area') {
          piece = nativeName(child, role, visiting);
        } else {
          piece = selfHidden(style) ? contentText(child, visiting, recursing) : contentText(child, visiting, recursing);
          if (!piece.trim()) {
            const title = child.getAttribute('title');
            if (title) piece = title;
          }
        }
      }
      const display = style.display;
      const block = display && display !== 'inline' && display !== 'contents' && !display.startsWith('inline');
      out += block ? ` ${piece} ` : piece;
    });
    return out;
  }

  // Fields Airlock typed a secret into (this frame's isolated world; page scripts
  // cannot see or clear it).
  const secretFilled = new WeakSet();

  const FRAME_OWNERS = new Set(['iframe', 'frame', 'object', 'embed', 'portal', 'fencedframe']);

  function isTextField(el) {
    const tag = el.localName;
    return tag === 'textarea' || el.isContentEditable ||
      (tag === 'input' && !['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file', 'hidden', 'range', 'color'].includes((el.type || '').toLowerCase()));
  }

  function composedContains(outer, inner) {
    for (let n = inner; n; n = parentElementComposed(n)) if (n === outer) return true;
    return false;
  }

  // The element keystrokes would reach now: the focused element of this focused
  // document, followed through open shadow roots. An <iframe> here means the focus
  // is in a frame inside it, of whatever origin.
  function receiver() {
    if (!document.hasFocus()) return null;
    let a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    return a;
  }

  // Where a secret would go if typed now: this frame's origin, its ancestors'
  // origins (a framing page), and whether what receives keystrokes is a text field
  // inside the target (focus moved elsewhere, or into a frame, means no).
  function secretDestination(target) {
    const found = resolve(target);
    if (found.error) return found;
    const el = found.el;
    const r = receiver();
    let focus = 'ok';
    if (!r || !composedContains(el, r)) focus = 'the field no longer has focus';
    else if (FRAME_OWNERS.has(r.localName)) focus = 'the focus is in a frame inside the field';
    else if (!isTextField(r)) focus = 'what has the focus is not a text field';
    const ancestors = Array.from(location.ancestorOrigins || []);
    return { ok: true, origin: location.origin, ancestors, focus, desc: describe(el) };
  }

  // Checks the destination and inserts the secret in one task, so no page script can
  // move the focus between the check and the insertion. execCommand inserts into this
  // document's focused field only, never into another frame.
  function typeSecret(target, text, origins) {
    const d = secretDestination(target);
    if (d.error) return d;
    const framedBy = d.ancestors.find((o) => !origins.includes(o));
    if (!origins.includes(d.origin) || framedBy !== undefined || d.focus !== 'ok') {
      return { ok: true, inserted: false, origin: d.origin, ancestors: d.ancestors, focus: d.focus };
    }
    const inserted = document.execCommand('insertText', false, text);
    return { ok: true, inserted, origin: d.origin, ancestors: d.ancestors, focus: d.focus };
  }

  function markSecret(target) {
    const found = resolve(target);
    if (found.error) return found;
    secretFilled.add(found.el);
    return { ok: true };
  }

  // The field's content was replaced by plain text: no longer a secret's.
  function unmarkSecret(target) {
    const found = resolve(target);
    if (found.error) return found;
    secretFilled.delete(found.el);
    return { ok: true };
  }

  // Inputs a page script turned from type=password into something else (recorded
  // from document start by Airlock's init script in this same world).
  function wasPassword(el) {
    const seen = globalThis.__airlockWasPassword;
    return !!seen && seen.has(el);
  }

  function masked(el) {
    return looksLikePassword(el) || secretFilled.has(el) || wasPassword(el);
  }

  // A red frame around one rectangle of the viewport, for the length of a screenshot.
  let outlined = null;
  function outline(x, y, w, h) {
    if (outlined) outlined.remove();
    outlined = null;
    if (x === null) return { ok: true };
    const box = document.createElement('div');
    box.style.cssText = `position:fixed;left:${x - 3}px;top:${y - 3}px;width:${w}px;height:${h}px;border:3px solid #e0115f;box-shadow:0 0 0 2px #fff;z-index:2147483647;pointer-events:none;margin:0;padding:0;background:transparent;box-sizing:content-box`;
    document.documentElement.appendChild(box);
    outlined = box;
    return { ok: true };
  }

  function embeddedControlText(el, role, visiting) {
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return aria;
    if (el.localName === 'select') {
      const opt = el.selectedOptions && el.selectedOptions[0];
      return opt ? opt.label : '';
    }
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (type === 'button' || type === 'submit' || type === 'reset') return nativeName(el, role, visiting);
    if (type === 'password' || type === 'hidden' || type === 'checkbox' || type === 'radio') return '';
    if (secretFilled.has(el) || wasPassword(el)) return '';
    return el.value || '';
  }

  // Calls `fn` for each child in the composed tree (shadow root content, slotted
  // nodes) without building an array per element: on large pages the arrays were a
  // third of the walk.
  function forEachChild(node, fn) {
    if (node.firstChild === undefined) {
      for (const c of node.childNodes) fn(c);
      return;
    }
    const shadow = node.shadowRoot;
    if (shadow) {
      for (let c = shadow.firstChild; c; c = c.nextSibling) fn(c);
      return;
    }
    if (node.localName === 'slot') {
      const assigned = node.assignedNodes({ flatten: true });
      if (assigned.length) {
        for (const c of assigned) fn(c);
        return;
      }
    }
    for (let c = node.firstChild; c; c = c.nextSibling) fn(c);
  }

  function childNodesComposed(node) {
    if (node.shadowRoot) return Array.from(node.shadowRoot.childNodes);
    if (node.localName === 'slot') {
      const assigned = node.assignedNodes({ flatten: true });
      if (assigned.length) return assigned;
    }
    return Array.from(node.childNodes);
  }

  function nameOf(el, role) {
    const name = textAlternative(el, role, new Set());
    return name.length > maxCut ? name.slice(0, maxCut) + '…' : name;
  }

  // ---- states -----------------------------------------------------------------------

  function isDisabled(el) {
    if (el.getAttribute('aria-disabled') === 'true') return true;
    try {
      return el.matches(':disabled');
    } catch (_) {
      return false;
    }
  }

  function checkedState(el, role) {
    const aria = el.getAttribute('aria-checked');
    if (el.localName === 'input' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.indeterminate) return 'mixed';
      return el.checked ? 'true' : 'false';
    }
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox' || role === 'menuitemradio') {
      return aria === 'mixed' ? 'mixed' : aria === 'true' ? 'true' : 'false';
    }
    return null;
  }

  function headingLevel(el, role) {
    if (role !== 'heading') return 0;
    const aria = parseInt(el.getAttribute('aria-level') || '', 10);
    if (aria > 0) return aria;
    const m = /^h([1-6])$/.exec(el.localName);
    return m ? Number(m[1]) : 2;
  }

  function isPassword(el) {
    return el.localName === 'input' && (el.getAttribute('type') || '').toLowerCase() === 'password';
  }

  // A password field, or a field made to look and behave like one: its characters
  // drawn as discs (-webkit-text-security), or marked for a password manager.
  function looksLikePassword(el) {
    if (isPassword(el)) return true;
    if (el.localName !== 'input' && el.localName !== 'textarea' && !el.isContentEditable) return false;
    const tokens = (el.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
    if (tokens.includes('current-password') || tokens.includes('new-password')) return true;
    const security = getComputedStyle(el).getPropertyValue('-webkit-text-security');
    return !!security && security !== 'none';
  }

  function valueOf(el, role) {
    const tag = el.localName;
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (type === 'checkbox' || type === 'radio' || type === 'button' || type === 'submit' ||
          type === 'reset' || type === 'image' || type === 'hidden' || type === 'file') return null;
      return el.value;
    }
    if (tag === 'textarea') return el.value;
    if (el.isContentEditable && (role === 'textbox' || role === 'searchbox')) return el.innerText;
    if (role === 'slider' || role === 'spinbutton' || role === 'progressbar' || role === 'meter') {
      return el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow');
    }
    return null;
  }

  // ---- the snapshot walk ----------------------------------------------------------------

  // Output node: {r: role, n: name, i: ref, l: level, c: checked, x: expanded,
  // s: selected, d: disabled, v: value, p: password, u: url, t: text, k: children,
  // fr: 1 for a frame owner}. Fields at their default are omitted to keep it small.
  // `hiddenHere` is true when the element whose children these are has
  // visibility:hidden: its own text is hidden, its children may show again.
  // Bounds of one walk, so no page can make a snapshot fail or stall: past them the
  // walk stops and says why (nodes, characters, time), or leaves out what is nested
  // deeper. A text longer than `maxCut` is cut there, far beyond what Airlock shows.
  const WALK_LIMITS = { nodes: 50000, depth: 256, nesting: 50, chars: 4000000, ms: 3000 };
  let walkBudget = null;
  let walkDepth = 0;
  let emitDepth = 0;
  function spent(chars) {
    const b = walkBudget;
    if (!b) return false;
    if (b.stop) return true;
    b.nodes += 1;
    b.chars += chars;
    if (b.nodes > WALK_LIMITS.nodes) b.stop = `it has more than ${WALK_LIMITS.nodes} nodes`;
    else if (b.chars > WALK_LIMITS.chars) b.stop = `it has more than ${WALK_LIMITS.chars} characters of text`;
    else if ((b.nodes & 127) === 0 && performance.now() > b.deadline) b.stop = `walking it took more than ${WALK_LIMITS.ms} ms`;
    return !!b.stop;
  }

  // ---- the walk cache ----------------------------------------------------------------
  //
  // What each element contributed to the last walk, so the walk that builds an
  // action's diff re-walks only what may have changed: an element whose subtree saw
  // no mutation since is taken whole from here. What a mutation cannot show is never
  // taken from here: form controls and other elements whose state lives in
  // properties, shadow trees (the observer does not see inside them), elements named
  // from elsewhere in the page; the surroundings of what the agent acted on and of
  // the focus (CSS :hover, :focus-within and :checked change what shows without a
  // mutation); and the whole page while an animation runs, after a style sheet
  // changed, or when the viewport did.
  const REGION_NODES = 400;
  const walkCache = {
    entries: new WeakMap(),
    // Elements whose own node must be walked again (and their ancestors).
    dirty: new WeakSet(),
    // Elements whose whole subtree must be walked again.
    deep: new WeakSet(),
    // Whether the entries hold a whole walk of this document as it was then.
    valid: false,
    url: '',
    viewport: '',
    // Under the pointer, or left by it, since the last walk; the pointer's element
    // now, and the focus at the last walk.
    acted: [],
    hovered: null,
    focus: null,
    // This walk: storing entries, taking them, and how deep inside a subtree that
    // must be walked fresh it is.
    on: false,
    reusing: false,
    fresh: 0,
    volatile: 0,
    frames: 0,
    // The last whole walk's tree, and its number: a diff's walk that reads the same
    // says only that (Airlock still holds what it rendered from it).
    // Numbers start anywhere, so no walk of another document has the same one.
    gen: Math.floor(Math.random() * 2 ** 40),
    root: null,
    // What this walk took whole from the cache (the nodes, as objects).
    taken: new Set(),
  };

  // How many nodes a node's subtree holds (itself included), kept on it under a
  // symbol, which JSON and Object.keys do not see. Set as each node is built, so a
  // patch numbers the last walk's tree by stepping over what it takes whole, not by
  // visiting each of its nodes (a 2,000-row table has ~26,000).
  const SIZE = Symbol('size');
  function sizeOf(node) {
    if (!node.k) return 1;
    let size = node[SIZE];
    if (size === undefined) {
      size = 1;
      for (const k of node.k) size += sizeOf(k);
      node[SIZE] = size;
    }
    return size;
  }

  function isVolatile(el) {
    const tag = el.localName;
    return tag === 'input' || tag === 'textarea' || tag === 'select' || tag === 'option' ||
      tag === 'iframe' || tag === 'frame' || tag === 'object' || tag === 'embed' ||
      tag === 'slot' || !!el.shadowRoot || el.isContentEditable ||
      el.hasAttribute('popover') || el.hasAttribute('aria-labelledby') ||
      el.hasAttribute('aria-describedby') || el.hasAttribute('aria-owns') ||
      el.hasAttribute('aria-activedescendant') || secretFilled.has(el);
  }

  function cacheContext(inLabel, hiddenHere) {
    return `${inLabel ? 1 : 0}${hiddenHere ? 1 : 0}:${walkDepth}:${emitDepth}:${maxCut}`;
  }

  function cacheMark() {
    const b = walkBudget;
    return { nodes: b.nodes, chars: b.chars, deep: b.deep, volatile: walkCache.volatile };
  }

  function cacheStore(mark, el, out, start, inLabel, hiddenHere) {
    const b = walkBudget;
    if (b.stop) return;
    if (isVolatile(el)) walkCache.volatile += 1;
    walkCache.entries.set(el, {
      ctx: cacheContext(inLabel, hiddenHere),
      out: out.slice(start),
      nodes: b.nodes - mark.nodes,
      chars: b.chars - mark.chars,
      deep: !mark.deep && b.deep,
      volatile: walkCache.volatile !== mark.volatile,
    });
  }

  // Takes `el`'s part of the last walk, if it still holds.
  function reuse(el, out, inLabel, hiddenHere) {
    if (walkCache.fresh || walkCache.dirty.has(el)) return false;
    const e = walkCache.entries.get(el);
    if (!e || e.volatile || e.ctx !== cacheContext(inLabel, hiddenHere)) return false;
    const b = walkBudget;
    if (b.stop || b.nodes + e.nodes > WALK_LIMITS.nodes || b.chars + e.chars > WALK_LIMITS.chars) return false;
    b.nodes += e.nodes;
    b.chars += e.chars;
    if (e.deep) b.deep = true;
    for (const n of e.out) {
      out.push(n);
      walkCache.taken.add(n);
    }
    return true;
  }

  function markDirty(el) {
    for (let n = el; n && !walkCache.dirty.has(n); n = parentElementComposed(n)) walkCache.dirty.add(n);
  }

  const STYLE_TAGS = new Set(['style', 'link', 'head', 'meta', 'base']);
  function touchesStyle(nodes) {
    for (const n of nodes) if (n.nodeType === Node.ELEMENT_NODE && STYLE_TAGS.has(n.localName)) return true;
    return false;
  }

  // What the observer saw, noted for the next walk.
  function noteMutations(records) {
    if (!walkCache.valid) return;
    for (const r of records) {
      const t = r.target;
      const el = t.nodeType === Node.ELEMENT_NODE ? t : t.parentElement;
      if (!el || STYLE_TAGS.has(el.localName) ||
          (r.type === 'childList' && (touchesStyle(r.addedNodes) || touchesStyle(r.removedNodes)))) {
        walkCache.valid = false;
        return;
      }
      // An attribute (a class, a style, hidden) may change how all below it shows.
      if (r.type === 'attributes') walkCache.deep.add(el);
      markDirty(el);
    }
  }

  // What `el`'s own :hover, :focus or :checked can reach through the selectors
  // around it: its parent at least (siblings: `:checked + .panel`), and the largest
  // ancestor above whose last walk was small (`.menu:hover ul`).
  function region(el) {
    let n = parentElementComposed(el) || el;
    for (let up = parentElementComposed(n); up; up = parentElementComposed(up)) {
      const e = walkCache.entries.get(up);
      if (!e || e.nodes > REGION_NODES) break;
      n = up;
    }
    return n;
  }

  // Before a walk: whether the last one's parts may be taken, and what may not be.
  function prepareReuse() {
    if (observer) noteMutations(observer.takeRecords());
    const viewport = `${innerWidth}x${innerHeight}@${devicePixelRatio}`;
    if (!walkCache.valid || walkCache.url !== location.href || walkCache.viewport !== viewport ||
        document.getAnimations().length > 0) return false;
    const around = walkCache.acted.slice();
    const focused = focusedElement();
    if (focused !== walkCache.focus) around.push(focused, walkCache.focus);
    if (around.length > 64) return false;
    for (const el of around) {
      if (!el || !el.isConnected) continue;
      const r = region(el);
      walkCache.deep.add(r);
      markDirty(r);
    }
    return true;
  }

  // The pointer moves to `el` for an action: the element it leaves loses :hover.
  function pointerTo(el) {
    if (walkCache.hovered && walkCache.hovered !== el) walkCache.acted.push(walkCache.hovered);
    walkCache.hovered = el;
    walkCache.acted.push(el);
  }

  // Whether two walks' trees read the same: a node taken whole from the cache is the
  // very object it was, so only what was walked again is compared field by field.
  function sameTree(a, b) {
    if (a === b) return true;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    for (const key of keys) {
      if (key === 'k') continue;
      if (a[key] !== b[key]) return false;
    }
    const ak = a.k || [], bk = b.k || [];
    if (ak.length !== bk.length) return false;
    for (let i = 0; i < ak.length; i++) if (!sameTree(ak[i], bk[i])) return false;
    return true;
  }

  // `root` as JSON, each node this walk took whole from the cache that is also in
  // `previous` written as `{"=": N}`, N its place in `previous` in preorder (the root
  // is 0). Anything else is written out whole.
  function patched(root, previous) {
    const place = new Map();
    let n = 0;
    const number = (node) => {
      if (walkCache.taken.has(node)) {
        place.set(node, n);
        n += sizeOf(node);
        return;
      }
      n += 1;
      if (node.k) for (const k of node.k) number(k);
    };
    number(previous);
    return JSON.stringify(root, function (key, value) {
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && value !== root) {
        const at = place.get(value);
        if (at !== undefined) return { '=': at };
      }
      return value;
    });
  }

  // The element with the focus, if one has it (not the page itself).
  function focusedElement() {
    const el = document.activeElement;
    return el && el !== document.body && el !== document.documentElement ? el : null;
  }

  // After a whole walk of the document: its parts are the next one's base.
  function finishCache(truncated) {
    walkCache.valid = !truncated;
    walkCache.url = location.href;
    walkCache.viewport = `${innerWidth}x${innerHeight}@${devicePixelRatio}`;
    walkCache.dirty = new WeakSet();
    walkCache.deep = new WeakSet();
    walkCache.acted = [];
    walkCache.focus = focusedElement();
  }

  // The outermost element with a pointer cursor (its children inherit the cursor),
  // not inside a link or other control, which have refs of their own.
  // How an element that is no control shows it is made to be acted on: 1 for a
  // pointer cursor, 2 for an `onclick` attribute (listeners added from script are
  // invisible to this isolated world; the pointer is their usual sign), 3 made to
  // be dragged, 4 put in the tab order (`tabindex` ≥ 0: a custom widget), 5 a move
  // or grab cursor (a sortable item). 0 when it is not, or when an ancestor already
  // is (only the outermost gets the ref) or is a control.
  function clickKind(el, style) {
    if (style.cursor === 'pointer') return 1;
    if (el.hasAttribute('onclick')) return 2;
    if (draggable(el)) return 3;
    if (el.hasAttribute('tabindex') && el.tabIndex >= 0) return 4;
    if (style.cursor === 'move' || style.cursor === 'grab') return 5;
    return 0;
  }

  // Made to be dragged (an HTML5 drag source), not merely draggable by default as
  // images and links are.
  function draggable(el) {
    // jQuery UI marks what its sortables and draggables move by the mouse (no
    // attribute, no cursor): the most common drag library on the web.
    return el.getAttribute('draggable') === 'true' ||
      el.classList.contains('ui-sortable-handle') || el.classList.contains('ui-draggable');
  }

  function clickableRoot(el, style) {
    const kind = clickKind(el, style);
    if (!kind) return 0;
    const parent = parentElementComposed(el);
    // A cursor is inherited: of a run of elements with it, the outermost has the
    // ref. Other signs are an element's own (a focusable menu's pointer items each
    // get one).
    if (parent) {
      const up = clickKind(parent, getComputedStyle(parent));
      if (up && (kind !== 1 && kind !== 5 || up === kind)) return 0;
    }
    for (let n = parent; n; n = parentElementComposed(n)) {
      if (INTERACTIVE.has(roleOf(n))) return 0;
    }
    return kind;
  }

  function walk(node, out, inLabel, hiddenHere) {
    if (walkBudget && walkDepth >= WALK_LIMITS.depth) {
      walkBudget.deep = true;
      return;
    }
    walkDepth += 1;
    try {
      walkChildren(node, out, inLabel, hiddenHere);
    } finally {
      walkDepth -= 1;
    }
  }

  function walkChildren(node, out, inLabel, hiddenHere) {
    forEachChild(node, (child) => {
      if (child.nodeType === Node.TEXT_NODE) {
        if (hiddenHere) return;
        const data = child.data.length > maxCut ? child.data.slice(0, maxCut) + '…' : child.data;
        if (spent(data.length)) return;
        const text = collapse(data);
        if (text.trim()) out.push({ r: 'text', t: text });
        return;
      }
      if (child.nodeType !== Node.ELEMENT_NODE) return;
      if (walkCache.reusing && reuse(child, out, inLabel, hiddenHere)) return;
      const mark = walkCache.on ? cacheMark() : null;
      if (spent(0)) return;
      const start = out.length;
      const fresh = walkCache.on && (isVolatile(child) || walkCache.deep.has(child));
      if (fresh) walkCache.fresh += 1;
      try {
        walkElement(child, out, inLabel, hiddenHere);
      } finally {
        if (fresh) walkCache.fresh -= 1;
      }
      if (mark) cacheStore(mark, child, out, start, inLabel, hiddenHere);
    });
  }

  // One element child of a walk, and what of it is exposed, into `out`.
  function walkElement(el, out, inLabel, hiddenHere) {
    if (SKIP_TAGS.has(el.localName)) return;
    if (el.getAttribute('aria-hidden') === 'true' || el.inert) return;
    const style = getComputedStyle(el);
    if (style.display === 'none') return;
    if (el.localName === 'details' && !el.open) {
      // Only the summary of a closed <details> is exposed.
      const summary = el.querySelector(':scope > summary');
      const group = { r: 'group', k: [] };
      if (summary) walk({ childNodes: [summary] }, group.k, inLabel, false);
      sizeOf(group);
      out.push(group);
      return;
    }
    const role = roleOf(el);
    // A `div` (generic) or a `span`, `i` … (no role of its own) made to be clicked.
    const plain = role === 'generic' || (role === 'none' && el.localName !== 'body' && el.localName !== 'html');
    const clickable = plain && !selfHidden(style) ? clickableRoot(el, style) : 0;
    if (clickable) {
      // Not a control, but made to be clicked (a div with a click handler and a
      // pointer): it gets a ref, so an agent can click what a person would.
      const node_ = { r: 'generic', i: refFor(el), cp: clickable };
      if (!(walkBudget && emitDepth >= WALK_LIMITS.nesting)) {
        const kids = [];
        emitDepth += 1;
        try {
          walk(el, kids, inLabel, false);
        } finally {
          emitDepth -= 1;
        }
        if (kids.length) {
          node_.k = kids;
          sizeOf(node_);
        }
      }
      out.push(node_);
      return;
    }
    if (selfHidden(style) || role === 'none' || role === 'generic' || role === 'LineBreak') {
      // Not exposed itself; its children may be.
      const kids = [];
      walk(el, kids, inLabel, selfHidden(style));
      if (el.localName === 'label' && role === 'none') {
        // A checkbox/radio label: its words are already the control's name.
        for (const k of kids) if (k.r !== 'text') out.push(k);
        return;
      }
      if (role === 'LineBreak') return;
      for (const k of kids) out.push(k);
      return;
    }
    const node_ = { r: role };
    const name = nameOf(el, role);
    if (name) node_.n = name;
    if (refAll || INTERACTIVE.has(role) || role === 'table' || role === 'grid' ||
        role === 'dialog' || role === 'alertdialog' || role === 'Iframe' || role === 'form' ||
        role === 'tabpanel' || role === 'menu' || role === 'tree' || role === 'region') {
      node_.i = refFor(el);
    } else if (!selfHidden(style)) {
      // A list item, heading, cell or paragraph a page made to be clicked or dragged
      // (a tab, an accordion's header, a sortable item): it keeps its role, and gets
      // a ref, so an agent can act on what a person would.
      const kind = clickableRoot(el, style);
      if (kind) {
        node_.i = refFor(el);
        node_.cp = kind;
      }
    }
    const level = headingLevel(el, role);
    if (level) node_.l = level;
    const checked = checkedState(el, role);
    if (checked !== null && checked !== 'false') node_.c = checked;
    const expanded = el.getAttribute('aria-expanded');
    if (expanded === 'true' || expanded === 'false') node_.x = expanded === 'true';
    else if (el.localName === 'details') node_.x = el.open;
    const selected = el.localName === 'option' ? el.selected : el.getAttribute('aria-selected') === 'true';
    if (selected) node_.s = true;
    if ((INTERACTIVE.has(role) || role === 'group') && isDisabled(el)) node_.d = true;
    if (masked(el)) {
      // A field that received a secret stays masked even if a script flips it to
      // type=text, until it is emptied.
      if (secretFilled.has(el) && !el.value && !el.innerText) secretFilled.delete(el);
      if (looksLikePassword(el)) node_.p = true;
      if (el.value || (el.isContentEditable && el.innerText)) node_.v = '••••';
    } else {
      const value = valueOf(el, role);
      if (value !== null && value !== '' && value !== name) node_.v = value.length > maxCut ? value.slice(0, maxCut) + '…' : value;
    }
    if (role === 'link' && el.href) node_.u = el.href;
    if (role === 'Iframe') {
      node_.fr = 1;
      walkCache.frames += 1;
    }
    // A label that names a rendered control: its words are that control's name.
    if (role === 'LabelText' && el.control) node_.lc = 1;
    // A masked editable box's content is its value: never walked into.
    if (role !== 'Iframe' && el.localName !== 'select' && !(el.localName === 'input') && el.localName !== 'textarea' && !masked(el)) {
      // Output nesting is bounded apart from the DOM's (folded wrappers add none):
      // the tree crosses as JSON, and JSON nested past ~120 levels is refused.
      if (walkBudget && emitDepth >= WALK_LIMITS.nesting) {
        walkBudget.deep = true;
      } else {
        const kids = [];
        emitDepth += 1;
        try {
          walk(el, kids, inLabel || role === 'LabelText', false);
        } finally {
          emitDepth -= 1;
        }
        if (kids.length) {
          node_.k = kids;
          sizeOf(node_);
        }
      }
    } else if (el.localName === 'select') {
      const kids = [];
      for (const opt of el.options) {
        if (opt.hidden) continue;
        const o = { r: 'option', n: collapse(opt.label).trim(), i: refFor(opt) };
        if (opt.selected) o.s = true;
        if (opt.disabled) o.d = true;
        kids.push(o);
      }
      if (kids.length) {
        node_.k = kids;
        sizeOf(node_);
      }
    }
    out.push(node_);
  }

  function snapshot(opts) {
    labelMaps = new Map();
    if (opts && opts.base && nextRef < opts.base) nextRef = opts.base;
    refAll = !!(opts && opts.refAll);
    const root = { r: 'RootWebArea', n: document.title ? collapse(document.title).trim() : '', k: [] };
    let start = document.body || document.documentElement;
    if (opts && opts.scope) {
      const el = elementByRef(opts.scope);
      if (!el) return JSON.stringify({ error: 'ref_not_found' });
      start = { childNodes: [el] };
    }
    walkBudget = { nodes: 0, chars: 0, deadline: performance.now() + WALK_LIMITS.ms, stop: null, deep: false };
    walkDepth = 0;
    emitDepth = 0;
    // Only a walk of the whole document builds (and may take from) the cache.
    // A probe (a test's whole walk) reads the page and leaves the cache as it was.
    const whole = !(opts && opts.scope) && !refAll && !(opts && opts.probe);
    watchMutations();
    walkCache.on = whole;
    walkCache.reusing = whole && !!(opts && opts.reuse) && prepareReuse();
    walkCache.fresh = 0;
    walkCache.volatile = 0;
    walkCache.frames = 0;
    walkCache.taken = new Set();
    try {
      if (start) walk(start === document.body ? document.documentElement : start, root.k, false, false);
    } finally {
      refAll = false;
      walkCache.on = false;
      walkCache.reusing = false;
    }
    const truncated = walkBudget.stop || (walkBudget.deep ? `it nests deeper than ${WALK_LIMITS.nesting} levels of elements, or ${WALK_LIMITS.depth} of tags` : null);
    if (whole) finishCache(!!walkBudget.stop);
    walkBudget = null;
    // One JSON string crosses CDP far faster than a deep object returned by value.
    if (!whole) return JSON.stringify({ tree: root, next: nextRef, url: location.href, truncated });
    const framed = walkCache.frames > 0;
    const previous = framed ? null : walkCache.root;
    const same = !!(opts && opts.sameAs) && opts.sameAs === walkCache.gen && previous !== null &&
      sameTree(root, previous);
    // Airlock holds the tree of walk `patchFrom`: every node taken whole from it is
    // sent as its number in that tree (preorder), not again.
    const patch = !same && !!(opts && opts.patchFrom) && opts.patchFrom === walkCache.gen &&
      previous !== null;
    const sent = same ? '' : patch ? patched(root, previous) : JSON.stringify(root);
    walkCache.gen += 1;
    walkCache.root = framed ? null : root;
    const rest = JSON.stringify({ next: nextRef, url: location.href, truncated, gen: walkCache.gen, patched: patch });
    if (same) return '{"same":true,' + rest.slice(1);
    return '{"tree":' + sent + ',' + rest.slice(1);
  }

  // ---- targets ----------------------------------------------------------------------

  function describe(el) {
    const role = roleOf(el);
    const name = nameOf(el, role);
    const r = role === 'none' || role === 'generic' ? el.localName : role;
    return name ? `${r} "${name}"` : r;
  }

  function* allElements(root) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let n = walker.currentNode; n; n = walker.nextNode()) {
      if (n.nodeType !== Node.ELEMENT_NODE) continue;
      yield n;
      if (n.shadowRoot) yield* allElements(n.shadowRoot);
    }
  }

  function querySelectorDeep(root, selector, found) {
    for (const el of root.querySelectorAll(selector)) found.push(el);
    for (const el of allElements(root)) {
      if (el.shadowRoot) for (const inner of el.shadowRoot.querySelectorAll(selector)) found.push(inner);
    }
    return found;
  }

  // Returns {el} or {error, message}.
  function resolve(target) {
    labelMaps = new Map();
    if (target.ref !== undefined) {
      const el = elementByRef(target.ref);
      if (!el) return { error: 'ref_not_found' };
      return { el };
    }
    let matches;
    let what;
    if (target.selector !== undefined) {
      what = `selector \`${target.selector}\``;
      try {
        matches = Array.from(new Set(querySelectorDeep(document, target.selector, [])));
      } catch (e) {
        return { error: 'invalid_argument', message: `\`${target.selector}\` is not a valid CSS selector` };
      }
    } else {
      // Names are matched by Airlock against what the agent is shown (redacted), from
      // `candidates`; a match here on the page's raw names would be a yes/no answer
      // about any secret a name holds.
      if (target.name !== undefined && target.name !== null) return { error: 'invalid_argument', message: 'names are matched outside the page' };
      what = `role ${target.role}`;
      matches = [];
      for (const el of allElements(document.documentElement)) {
        if (roleMatches(el, target.role) && !isHiddenForAx(el)) matches.push(el);
      }
    }
    if (target.index !== undefined && target.index !== null) {
      if (target.index >= matches.length) {
        return { error: 'not_found', message: `${what} at index ${target.index} (it has ${matches.length} ${matches.length === 1 ? 'match' : 'matches'}; index counts from 0)` };
      }
      return { el: matches[target.index] };
    }
    if (matches.length === 0) return { error: 'not_found', message: what };
    if (matches.length > 1) {
      return { error: 'invalid_argument', message: `${what} matches ${matches.length} elements; pass \`index\` (0-based) or a ref from a snapshot` };
    }
    return { el: matches[0] };
  }

  // ---- actionability ------------------------------------------------------------------

  const nextFrame = () => new Promise((resolveFrame) => {
    let done = false;
    requestAnimationFrame(() => { done = true; resolveFrame(); });
    // rAF does not fire in a hidden tab; fall back to a timer.
    setTimeout(() => { if (!done) resolveFrame(); }, 50);
  });

  function rectOf(el) {
    const r = el.getBoundingClientRect();
    return { x: r.left, y: r.top, w: r.width, h: r.height };
  }

  function hitTargetOk(el, x, y) {
    let hit = document.elementFromPoint(x, y);
    // Descend through open shadow roots to the innermost element at the point.
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    if (!hit) return { ok: false, by: 'nothing (outside the viewport)' };
    for (let n = hit; n; n = parentElementComposed(n)) {
      if (n === el) return { ok: true };
    }
    // A <label> forwards clicks to its control.
    for (const label of labelsOf(el)) if (label.contains(hit)) return { ok: true };
    return { ok: false, by: describe(hit) };
  }

  // Scrolls the target into view and waits until it is visible, enabled (when asked),
  // stable for two frames and not covered. Returns its centre in this frame's
  // viewport, or the last reason it was not actionable when the budget ran out.
  async function prepare(target, opts) {
    const deadline = performance.now() + (opts.timeoutMs || 5000);
    let why = '';
    let lastRect = null;
    // Waiting helps only while the page still changes: a target that is missing, or
    // disabled, on a page that has loaded and stayed still for IDLE_MS will not
    // appear or be enabled by waiting longer.
    watchMutations();
    let seen = mutationCount;
    let lastChange = performance.now();
    const settledFor = () => {
      if (mutationCount !== seen) {
        seen = mutationCount;
        lastChange = performance.now();
      }
      return document.readyState === 'complete' && document.getAnimations().length === 0 &&
        performance.now() - lastChange > IDLE_MS;
    };
    for (;;) {
      const found = resolve(target);
      if (found.error) {
        if (found.error !== 'not_found' || performance.now() > deadline || !opts.waitForMatch || settledFor()) return found;
        await nextFrame();
        continue;
      }
      const el = found.el;
      const desc = describe(el);
      if (isHiddenForAx(el) && !opts.allowHidden) {
        why = 'it is hidden';
      } else {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) {
          why = 'it has no size (not rendered)';
        } else if (opts.needEnabled && isDisabled(el)) {
          why = 'it is disabled';
          if (settledFor()) return { error: 'not_actionable', message: `${why}, and the page has stopped changing`, desc };
        } else {
          const vw = innerWidth, vh = innerHeight;
          if (r.bottom <= 0 || r.right <= 0 || r.top >= vh || r.left >= vw ||
              r.top < 0 || r.left < 0 || r.bottom > vh || r.right > vw) {
            el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
          }
          const rect = rectOf(el);
          // With no animation or transition running anywhere in the document, a rect
          // cannot move by itself before the click lands: skip the frame of waiting
          // that comparing two rects costs. Otherwise it must hold still for a frame.
          const animated = document.getAnimations().length > 0;
          const still = !lastRect && !animated;
          // A finite animation running on the element or an ancestor will move it
          // again even if two frames happened to show the same rect (a starved
          // renderer can paint two frames at one animation time): wait for its end.
          // Endless ones (a pulsing glow) are judged by the rect alone.
          const stable = still || (lastRect && lastRect.x === rect.x && lastRect.y === rect.y &&
            lastRect.w === rect.w && lastRect.h === rect.h && !(animated && finiteAnimationOn(el)));
          lastRect = rect;
          if (!stable) {
            why = 'it is still moving';
          } else {
            const cx = rect.x + rect.w / 2, cy = rect.y + rect.h / 2;
            const hit = opts.hitTest ? hitTargetOk(el, cx, cy) : { ok: true };
            if (hit.ok) {
              pointerTo(el);
              const mark = markAction(el);
              let valueType;
              if (opts.focusForTyping != null) {
                const focused = focusElementForTyping(el, opts.focusForTyping);
                if (focused.error) return focused;
                valueType = focused.valueType;
              }
              const inspected = opts.inspect ? inspect({ ref: refFor(el) }) : undefined;
              return {
                x: cx, y: cy, rect, desc, ref: refFor(el), mark, focused: opts.focusForTyping != null, inspected,
                valueType, lang: valueType ? (navigator.language || '') : undefined,
              };
            }
            why = `it is covered by ${hit.by}`;
          }
        }
      }
      if (performance.now() > deadline) return { error: 'not_actionable', message: why, desc };
      await nextFrame();
    }
  }

  function finiteAnimationOn(el) {
    for (let n = el; n; n = n.parentElement) {
      for (const a of n.getAnimations()) {
        if (a.playState === 'running' && Number.isFinite(a.effect?.getComputedTiming().endTime)) return true;
      }
    }
    return false;
  }

  function focusForTyping(target, clearFirst) {
    const found = resolve(target);
    if (found.error) return found;
    return focusElementForTyping(found.el, clearFirst);
  }

  // Inputs whose value is picked, not typed (see Rust's `fields.rs`).
  const VALUE_TYPES = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range']);

  function focusElementForTyping(el, clearFirst) {
    if (el.localName === 'input' && VALUE_TYPES.has(el.type)) {
      if (isDisabled(el) || el.readOnly) return { error: 'not_actionable', message: 'it is disabled or read-only', desc: describe(el) };
      el.focus();
      return { ok: true, desc: describe(el), focused: document.activeElement === el, valueType: el.type, lang: navigator.language || '' };
    }
    const editable = isTextField(el);
    if (!editable) return { error: 'not_actionable', message: 'it is not a text field', desc: describe(el) };
    if (isDisabled(el) || el.readOnly) return { error: 'not_actionable', message: 'it is disabled or read-only', desc: describe(el) };
    el.focus();
    if (clearFirst) {
      if (el.isContentEditable) {
        const range = document.createRange();
        range.selectNodeContents(el);
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      } else if (typeof el.select === 'function') {
        el.select();
      }
    } else if (!el.isContentEditable && typeof el.setSelectionRange === 'function') {
      try { el.setSelectionRange(el.value.length, el.value.length); } catch (_) { /* type=email etc. */ }
    }
    return { ok: true, desc: describe(el), focused: document.activeElement === el || el.contains(document.activeElement) };
  }

  // An input that takes no typing (date, time, color, range …): its value written
  // as the input takes it, with the events a person's pick fires (the native setter
  // is this world's, so a framework's value tracker in the page sees a change); the
  // value it holds afterwards (empty when the input refused it).
  function setValue(target, value) {
    const found = resolve(target);
    if (found.error) return found;
    const el = found.el;
    if (!(el.localName === 'input' && VALUE_TYPES.has(el.type))) return { error: 'not_actionable', message: 'it takes typing, not a value', desc: describe(el) };
    el.focus();
    el.value = value;
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { value: el.value, desc: describe(el) };
  }

  function selectOptions(target, values) {
    const found = resolve(target);
    if (found.error) return found;
    const el = found.el;
    if (el.localName !== 'select') return { error: 'not_actionable', message: 'it is not a <select>', desc: describe(el) };
    if (isDisabled(el)) return { error: 'not_actionable', message: 'it is disabled', desc: describe(el) };
    if (!el.multiple && values.length > 1) return { error: 'invalid_argument', message: `${describe(el)} accepts one value, got ${values.length}` };
    const chosen = [];
    for (const v of values) {
      const opt = Array.from(el.options).find((o) => o.value === v) ||
        Array.from(el.options).find((o) => collapse(o.label).trim() === v);
      if (!opt) return { error: 'invalid_argument', message: `${describe(el)} has no option "${v}"` };
      if (opt.disabled) return { error: 'not_actionable', message: `option "${v}" is disabled`, desc: describe(el) };
      chosen.push(opt);
    }
    for (const o of el.options) o.selected = chosen.includes(o);
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { ok: true, desc: describe(el), selected: chosen.map((o) => collapse(o.label).trim()) };
  }

  function checked(target) {
    const found = resolve(target);
    if (found.error) return found;
    const role = roleOf(found.el);
    const state = checkedState(found.el, role);
    if (state === null) return { error: 'not_actionable', message: 'it is not a checkbox, radio or switch', desc: describe(found.el) };
    return { checked: state === 'true', desc: describe(found.el) };
  }

  function fieldKind(target) {
    const found = resolve(target);
    if (found.error) return found;
    const el = found.el;
    const role = roleOf(el);
    if (el.localName === 'select') return { kind: 'select' };
    if (role === 'checkbox' || role === 'radio' || role === 'switch') return { kind: 'check' };
    return { kind: 'text' };
  }

  function scrollIntoView(target) {
    const found = resolve(target);
    if (found.error) return found;
    found.el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    return { ok: true, desc: describe(found.el) };
  }

  // What Airlock's rules judge of a target: its role and name as a snapshot shows
  // them, whether it is (or was) a password field, where a link around it goes, and
  // the document it is in. Its ref names exactly this element afterwards.
  function inspect(target) {
    const found = resolve(target);
    if (found.error) return found;
    const el = found.el;
    const role = roleOf(el);
    const link = el.closest('a[href], area[href]');
    return {
      ref: refFor(el), role, name: nameOf(el, role), password: masked(el),
      href: link ? link.href : null, url: location.href, origin: location.origin, rect: rectOf(el),
    };
  }

  const ACTING_ROLES = new Set([
    'button', 'link', 'checkbox', 'radio', 'switch', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'tab', 'option', 'textbox', 'searchbox', 'combobox', 'slider',
    'spinbutton', 'listbox', 'treeitem',
  ]);

  // The element a click at (x, y) acts on: the innermost one there (through open
  // shadow roots), or the control holding it (the button around a label's span).
  function inspectPoint(x, y) {
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    if (!hit) return { error: 'not_found', message: `nothing at (${x}, ${y})` };
    pointerTo(hit);
    for (let n = hit; n; n = parentElementComposed(n)) {
      if (ACTING_ROLES.has(roleOf(n))) return inspect({ ref: refFor(n) });
    }
    return inspect({ ref: refFor(hit) });
  }

  // DOM changes, counted, so Airlock can wait for the next one instead of polling.
  let mutationCount = 0;
  let observer = null;
  let waiters = [];
  function watchMutations() {
    if (observer) return;
    observer = new MutationObserver((records) => {
      mutationCount++;
      noteMutations(records);
      const woken = waiters;
      waiters = [];
      for (const w of woken) w();
    });
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
  }

  // The page's visible text once the DOM has changed since `seen` (or `waitMs` has
  // passed). Text is compared with what an agent waits for by Airlock, after
  // redaction: matching it here would answer yes or no about a secret the page shows.
  async function changedSince(seen, waitMs) {
    watchMutations();
    if (mutationCount === seen) {
      await new Promise((r) => {
        waiters.push(r);
        setTimeout(r, waitMs);
      });
    }
    return mutationCount;
  }

  // What the page looked like as an action's input was about to land on `el`: its
  // DOM change count (returned, for `settled`), what had focus, and the state of
  // `el` a snapshot shows that no DOM change records (a box's check, a select's
  // choice). Not a field's value: it may be a secret, and is kept nowhere here.
  let actionMark = { m: -1, focus: null, el: null, state: '' };
  function markAction(el) {
    watchMutations();
    actionMark = { m: mutationCount, focus: focusedElement(), el, state: liveState(el) };
    return actionMark.m;
  }
  // Focus went somewhere other than the target (a dialog's field): focus landing on
  // the clicked element itself is the click's own doing, not the page's reaction.
  function movedFocus() {
    const now = focusedElement();
    const el = actionMark.el;
    return now !== actionMark.focus && !(el && now && (now === el || el.contains(now)));
  }
  function liveState(el) {
    return el ? `${el.checked}|${el.indeterminate}|${el.selectedIndex}` : '';
  }

  // After an action's input: whether the page reacted since `seen` (its DOM changed,
  // focus moved elsewhere, or the target's check or choice did; null when `seen` is not known) and
  // whether the page closed itself. Asked at once: the input's handlers have run.
  // (Right after mouse input Chromium holds timers back until its next frame, so
  // even a task of waiting would cost a frame.)
  function settled(seen) {
    let reacted = null;
    if (observer && typeof seen === 'number') {
      const records = observer.takeRecords();
      if (records.length) {
        mutationCount++;
        noteMutations(records);
      }
      reacted = mutationCount !== seen || (seen === actionMark.m && (movedFocus() ||
        liveState(actionMark.el) !== actionMark.state));
    }
    return { closed: window.closed, reacted };
  }

  async function textAfter(seen, waitMs) {
    await changedSince(seen, waitMs);
    const body = document.body;
    const text = body ? collapse(body.innerText) : '';
    const cut = text.length > READ_LIMITS.chars;
    return { v: mutationCount, text: cut ? text.slice(0, READ_LIMITS.chars) : text, cut };
  }

  // Roles Chromium names its own way, and the ARIA roles an agent would use for them.
  const ROLE_SYNONYMS = {
    image: ['img'], disclosuretriangle: ['button'], colorwell: ['button'],
    date: ['textbox'], datetime: ['textbox'], inputtime: ['textbox'],
  };

  // Whether `el` has the role an agent asked for: case-insensitive, synonyms too.
  function roleMatches(el, wanted) {
    const role = roleOf(el).toLowerCase();
    const w = String(wanted).toLowerCase();
    return role === w || (ROLE_SYNONYMS[role] || []).includes(w);
  }

  // Visible elements of `role` with their names (for Airlock to match, redacted).
  function candidates(role) {
    labelMaps = new Map();
    watchMutations();
    const list = [];
    for (const el of allElements(document.documentElement)) {
      if (roleMatches(el, role) && !isHiddenForAx(el)) list.push({ ref: refFor(el), name: nameOf(el, roleOf(el)) });
    }
    return { v: mutationCount, list, ready: document.readyState === 'complete' && document.getAnimations().length === 0 };
  }

  // Elements by the words they show, for a `text` target (Playwright's getByText):
  // each visible element with words of its own (a text node child, or a button's
  // value), its shown text (collapsed, cut), and the index of the nearest such
  // ancestor, so Airlock keeps the innermost match. Matched by Airlock on redacted
  // text, as names are: a match here would answer yes or no about a secret.
  const TEXT_LIMITS = { elements: 20000, chars: 2000000 };
  // Hidden from sight by a clip (the `sr-only`/`visually-hidden` pattern).
  function visuallyHidden(el) {
    const style = getComputedStyle(el);
    return (style.position === 'absolute' || style.position === 'fixed') &&
      (/rect\(\s*0(px)?[\s,]+0(px)?[\s,]+0(px)?[\s,]+0(px)?\s*\)/.test(style.clip) || style.clipPath === 'inset(50%)');
  }
  function textCandidates() {
    watchMutations();
    const list = [];
    const at = new Map();
    let chars = 0;
    for (const el of allElements(document.documentElement)) {
      if (list.length >= TEXT_LIMITS.elements || chars > TEXT_LIMITS.chars) break;
      if (SKIPPED.has(el.localName)) continue;
      let text = '';
      if (el.localName === 'input' && (el.type === 'submit' || el.type === 'button' || el.type === 'reset')) {
        text = el.value || '';
      } else {
        let own = false;
        for (const c of el.childNodes) {
          if (c.nodeType === Node.TEXT_NODE && /\S/.test(c.data)) { own = true; break; }
        }
        if (!own) continue;
        text = el.innerText || el.textContent || '';
      }
      // Words inside a control (a span in a button or link) name the control: it is
      // what gets clicked and what the risk rules judge.
      let target = el;
      for (let n = el; n; n = parentElementComposed(n)) {
        if (INTERACTIVE.has(roleOf(n))) { target = n; break; }
      }
      if (at.has(target)) continue;
      if (target !== el) text = target.innerText || target.value || text;
      text = collapse(text).trim();
      if (!text || isHiddenForAx(target)) continue;
      // Shown to people: not a screen reader's live region or skip link, kept 1 px
      // wide (or clipped away) so that only assistive technology reads it.
      const r = target.getBoundingClientRect();
      if (r.width <= 1 || r.height <= 1 || visuallyHidden(target)) continue;
      if (text.length > 300) text = text.slice(0, 300);
      let anc = -1;
      for (let p = parentElementComposed(target); p; p = parentElementComposed(p)) {
        if (at.has(p)) { anc = at.get(p); break; }
      }
      at.set(target, list.length);
      list.push({ ref: refFor(target), name: text, anc });
      chars += text.length;
    }
    return { v: mutationCount, list, ready: document.readyState === 'complete' && document.getAnimations().length === 0 };
  }

  async function waitFor(cond, timeoutMs) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = resolve(cond.target);
      const ok = !found.error && !isHiddenForAx(found.el) && found.el.getBoundingClientRect().width > 0;
      if (ok) return { ok: true };
      if (performance.now() > deadline) return { ok: false };
      await new Promise((r) => setTimeout(r, 30));
    }
  }

  // ---- page text (markdown-ish) ---------------------------------------------------------

  // The page's text, bounded like a walk: past READ_LIMITS it stops and says why.
  const READ_LIMITS = { chars: 8000000, depth: 256, ms: 3000 };
  function readText() {
    const lines = [];
    let inline = '';
    let taken = 0;
    let elements = 0;
    let depth = 0;
    let stop = null;
    const deadline = performance.now() + READ_LIMITS.ms;
    const flush = () => {
      const t = collapse(inline).trim();
      if (t) lines.push(t);
      inline = '';
    };
    const blank = () => { flush(); if (lines.length && lines[lines.length - 1] !== '') lines.push(''); };
    function cellText(el) { return collapse(el.innerText || '').trim().replace(/\|/g, '\\|'); }
    function visit(node, listDepth) {
      if (stop) return;
      if (depth >= READ_LIMITS.depth) { stop = `it nests deeper than ${READ_LIMITS.depth} levels`; return; }
      depth += 1;
      try { visitChildren(node, listDepth); } finally { depth -= 1; }
    }
    function visitChildren(node, listDepth) {
      for (const child of childNodesComposed(node)) {
        if (stop) return;
        if (child.nodeType === Node.TEXT_NODE) {
          let data = child.data;
          if (taken + data.length > READ_LIMITS.chars) {
            data = data.slice(0, READ_LIMITS.chars - taken);
            stop = `it has more than ${READ_LIMITS.chars} characters of text`;
          }
          taken += data.length;
          inline += data;
          continue;
        }
        if (child.nodeType !== Node.ELEMENT_NODE) continue;
        if ((++elements & 127) === 0 && performance.now() > deadline) { stop = `reading it took more than ${READ_LIMITS.ms} ms`; return; }
        const el = child;
        if (SKIP_TAGS.has(el.localName) || el.getAttribute('aria-hidden') === 'true') continue;
        const style = getComputedStyle(el);
        if (style.display === 'none') continue;
        if (selfHidden(style)) { visit(el, listDepth); continue; }
        const tag = el.localName;
        const m = /^h([1-6])$/.exec(tag);
        if (m) { blank(); lines.push('#'.repeat(Number(m[1])) + ' ' + collapse(el.innerText).trim()); lines.push(''); continue; }
        if (tag === 'a' && el.href) {
          const t = collapse(el.innerText || '').trim();
          if (t) inline += ` [${t}](${el.href}) `;
          continue;
        }
        if (tag === 'ul' || tag === 'ol') {
          flush();
          let i = 1;
          for (const li of el.children) {
            if (li.localName !== 'li') continue;
            const saved = lines.length;
            visit(li, listDepth + 1);
            flush();
            const own = lines.splice(saved).filter((l) => l !== '');
            const bullet = tag === 'ol' ? `${i++}. ` : '- ';
            const pad = '  '.repeat(listDepth);
            own.forEach((l, j) => lines.push(j === 0 && !/^\s*(- |\d+\. )/.test(l) ? pad + bullet + l : (j === 0 ? pad + bullet + l.trim() : pad + '  ' + l)));
          }
          if (listDepth === 0) blank();
          continue;
        }
        if (tag === 'table') {
          blank();
          const rows = Array.from(el.rows || []).filter((r) => getComputedStyle(r).display !== 'none');
          rows.forEach((row, idx) => {
            lines.push('| ' + Array.from(row.cells).map(cellText).join(' | ') + ' |');
            if (idx === 0) lines.push('|' + Array.from(row.cells).map(() => ' --- |').join(''));
          });
          lines.push('');
          continue;
        }
        if (tag === 'br') { flush(); continue; }
        if (tag === 'img') { const alt = el.getAttribute('alt'); if (alt) inline += ` ![${alt}] `; continue; }
        if (tag === 'input' || tag === 'textarea' || tag === 'select') continue;
        const block = style.display && !style.display.startsWith('inline') && style.display !== 'contents';
        if (block) { flush(); visit(el, listDepth); flush(); if (tag === 'p' || tag === 'pre' || tag === 'blockquote') blank(); }
        else visit(el, listDepth);
      }
    }
    if (document.body) visit(document.body, 0);
    flush();
    while (lines.length && lines[lines.length - 1] === '') lines.pop();
    return { text: lines.join('\n'), truncated: stop };
  }

  function frameOwnerOffset(ref) {
    const el = elementByRef(ref);
    if (!el) return { error: 'ref_not_found' };
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    return {
      x: r.left + el.clientLeft + parseFloat(s.paddingLeft || '0'),
      y: r.top + el.clientTop + parseFloat(s.paddingTop || '0'),
    };
  }

  // Each ref's box in this frame's viewport, CSS px rounded: [x, y, width, height],
  // or null when the element is gone or takes no space.
  function boxes(refs) {
    return refs.map((ref) => {
      const el = elementByRef(ref);
      if (!el) return null;
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) return null;
      return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];
    });
  }

  // What the frame shows as text, for finding where a secret is shown in pixels:
  // every text node's text, in composed document order (a value split over
  // several nodes reads whole when they are joined), and every shown value or
  // attribute of an element (a field's value, aria-label, title, alt, placeholder, a
  // button's value). Rust finds the secrets in them (the walker never compares page
  // text with anything), then asks `shownRects` where the ones it found are. Fields
  // that always mask (a secret was typed into them; they look like password fields)
  // come with their boxes. Past the limits the frame is `incomplete`: all of it is
  // painted over.
  const SHOWN_LIMITS = { nodes: 60000, chars: 4000000 };
  let shownNodes = [];
  let shownItems = [];
  // Closed shadow roots, handed over by Airlock through DevTools (tab/closed.rs):
  // host -> root. Only `shown` looks inside them; snapshots see what scripts see.
  const closedRoots = new WeakMap();
  function adoptClosed(root) {
    if (!(root instanceof ShadowRoot) || !root.host) return false;
    closedRoots.set(root.host, root);
    return true;
  }
  const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'head']);
  const SHOWN_ATTRS = ['aria-label', 'title', 'alt', 'placeholder'];
  function shown() {
    shownNodes = [];
    shownItems = [];
    const texts = [];
    const items = [];
    const masks = [];
    let chars = 0;
    let incomplete = false;
    const add = (el, text) => {
      if (!text || !/\S/.test(text)) return;
      shownItems.push(el);
      items.push(text);
      chars += text.length;
    };
    function visit(node) {
      if (incomplete) return;
      if (node.nodeType === Node.TEXT_NODE) {
        const data = node.data;
        if (!/\S/.test(data)) return;
        shownNodes.push(node);
        texts.push(data);
        chars += data.length;
        if (shownNodes.length > SHOWN_LIMITS.nodes || chars > SHOWN_LIMITS.chars) incomplete = true;
        return;
      }
      if (node.nodeType !== Node.ELEMENT_NODE) {
        if (node.nodeType === Node.DOCUMENT_FRAGMENT_NODE || node.nodeType === Node.DOCUMENT_NODE) forEachChild(node, visit);
        return;
      }
      const el = node;
      if (SKIPPED.has(el.localName)) return;
      for (const name of SHOWN_ATTRS) {
        const v = el.getAttribute(name);
        if (v) add(el, v);
      }
      // Text the style draws (`content` of ::before and ::after, `attr()` read
      // here): in no text node, yet on the screen.
      for (const pseudo of ['::before', '::after']) {
        const drawn = generated(el, pseudo);
        if (drawn) add(el, drawn);
      }
      const tag = el.localName;
      // What a canvas draws cannot be read: in a session that hides secrets it is
      // painted over whole, whatever it shows.
      if (tag === 'canvas') {
        const r = el.getBoundingClientRect();
        if (r.width && r.height) masks.push([r.left, r.top, r.width, r.height]);
      }
      if (el.isContentEditable && (secretFilled.has(el) || masked(el)) && el.innerText) {
        const r = el.getBoundingClientRect();
        if (r.width && r.height) masks.push([r.left, r.top, r.width, r.height]);
      }
      if (tag === 'input' || tag === 'textarea' || tag === 'select') {
        const value = tag === 'select'
          ? Array.from(el.selectedOptions || [], (o) => o.label).join(' ')
          : el.value;
        if (masked(el) || secretFilled.has(el)) {
          if (value) {
            const r = el.getBoundingClientRect();
            if (r.width && r.height) masks.push([r.left, r.top, r.width, r.height]);
          }
        } else {
          add(el, value);
        }
        if (tag === 'input' && (el.type === 'button' || el.type === 'submit' || el.type === 'reset')) add(el, el.value);
      }
      forEachChild(el, visit);
      const closed = closedRoots.get(el);
      if (closed) for (let c = closed.firstChild; c; c = c.nextSibling) visit(c);
    }
    visit(document);
    return { texts, items, masks, incomplete };
  }

  // The text a style draws before or after `el` (`content`: strings, `attr(…)`,
  // counters left out), or '' when it draws none.
  function generated(el, pseudo) {
    const content = getComputedStyle(el, pseudo).content;
    if (!content || content === 'none' || content === 'normal') return '';
    let out = '';
    const re = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|attr\(\s*([^\s)]+)\s*\)/g;
    for (let m = re.exec(content); m; m = re.exec(content)) {
      if (m[3] !== undefined) out += el.getAttribute(m[3]) || '';
      else out += (m[1] ?? m[2]).replace(/\\(.)/g, '$1');
    }
    return out;
  }

  // Where the text nodes and elements `shown` listed at `nodes` and `items` are now,
  // in the frame's viewport (CSS pixels): each text node's line boxes, each
  // element's border box.
  function shownRects(nodes, items) {
    const out = [];
    const keep = (r) => { if (r.width > 0 && r.height > 0) out.push([r.left, r.top, r.width, r.height]); };
    for (const i of nodes) {
      const node = shownNodes[i];
      if (!node || !node.isConnected) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) keep(r);
    }
    for (const i of items) {
      const el = shownItems[i];
      if (el && el.isConnected) keep(el.getBoundingClientRect());
    }
    return out;
  }

  // `shownRects`, and whether any of those nodes and elements is moved by an
  // animation running now (CSS or Web Animations on it or an ancestor): where it is
  // in the capture cannot be known from where it is before and after.
  function placed(nodes, items) {
    const rects = shownRects(nodes, items);
    const targets = [];
    for (const a of document.getAnimations()) {
      if (a.playState !== 'running') continue;
      const t = a.effect && a.effect.target;
      if (t) targets.push(t);
    }
    const moved = (n) => {
      for (let at = n; at; at = at.parentNode || at.host) {
        if (targets.includes(at)) return true;
      }
      return false;
    };
    let moving = false;
    if (targets.length) {
      for (const i of nodes) if (shownNodes[i] && moved(shownNodes[i])) moving = true;
      for (const i of items) if (shownItems[i] && moved(shownItems[i])) moving = true;
    }
    return { rects, moving };
  }

  // The page is about to leave (a link, a form's submit, a script's navigation):
  // where it shows text and fields now, for the image of a navigation an effect
  // rule holds. Chromium answers no DevTools command for a frame while it
  // navigates, so nothing can be asked of the page then; this is told instead,
  // through Airlock's binding (seen only in this world). Every text node's text is
  // sent (a value split over nodes reads whole joined), with its line boxes where
  // they are in the viewport; every shown value with its box; every field that
  // always masks; every frame's box (a frame's own page is not read here: it is
  // painted over whole). Only in a session that hides secrets.
  let watchingLeaving = false;
  function leaving() {
    const report = globalThis.__airlockLeaving;
    if (typeof report !== 'function') return;
    const s = shown();
    const w = innerWidth;
    const h = innerHeight;
    const inView = (r) => r.width > 0 && r.height > 0 && r.right > 0 && r.bottom > 0 && r.left < w && r.top < h;
    const rect = (r) => [r.left, r.top, r.width, r.height];
    const nodeRects = shownNodes.map((node) => {
      const parent = node.parentElement;
      if (parent && !inView(parent.getBoundingClientRect())) return [];
      const range = document.createRange();
      range.selectNodeContents(node);
      return Array.from(range.getClientRects(), (r) => r).filter(inView).map(rect);
    });
    const itemRects = shownItems.map((el) => {
      const r = el.getBoundingClientRect();
      return inView(r) ? [rect(r)] : [];
    });
    const frames = Array.from(document.querySelectorAll('iframe, frame, embed, object'), (el) => el.getBoundingClientRect())
      .filter(inView).map(rect);
    const vv = globalThis.visualViewport;
    report(JSON.stringify({
      texts: s.texts, items: s.items, masks: s.masks, incomplete: s.incomplete,
      nodeRects, itemRects, frames,
      x: vv ? vv.pageLeft : scrollX, y: vv ? vv.pageTop : scrollY,
      w: vv ? vv.width : w, h: vv ? vv.height : h,
    }));
  }

  globalThis.__airlock = {
    snapshot, resolve, boxes, prepare, settled, focusForTyping, secretDestination, typeSecret, markSecret, unmarkSecret, outline, fieldKind, setValue, selectOptions, checked, scrollIntoView,
    waitFor, textAfter, changedSince, candidates, textCandidates, readText, frameOwnerOffset, elementByRef, describe, roleOf, nameOf,
    inspect, inspectPoint, shown, shownRects, placed, adoptClosed,
    init(base, cut, hiding) {
      if (nextRef < base) nextRef = base;
      if (cut > maxCut) maxCut = cut;
      if (hiding && !watchingLeaving) {
        watchingLeaving = true;
        addEventListener('beforeunload', leaving, true);
      }
    },
  };
  return 'installed';
})()

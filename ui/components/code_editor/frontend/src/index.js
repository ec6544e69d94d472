// Kernel Lab's code editor: CodeMirror 6 as a Streamlit Components v2 component.
// Bundled by esbuild into ../dist/code_editor.js by the Makefile (`make run`, `make test`); the bundle is not committed.
//
// data (from Python): {id, value, markers: [{line, kind, message}], height, dark}
//   id changes when Python replaces the text (another problem, an upload, Start over): only then is `value` loaded.
// state "value": the text, sent on blur and after a pause in typing. trigger "run": the text, on Ctrl/Cmd+Enter.
import { EditorState, Prec, RangeSet, StateEffect, StateField, Compartment } from "@codemirror/state";
import {
  Decoration, EditorView, GutterMarker, drawSelection, gutter, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { bracketMatching, defaultHighlightStyle, HighlightStyle, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { tags as t } from "@lezer/highlight";

const DEBOUNCE_MS = 700;
const KINDS = ["refusal", "mismatch", "race"]; // gutter priority: the first kind on a line wins its dot

class MarkerDot extends GutterMarker {
  constructor(kind, message) { super(); this.kind = kind; this.message = message; }
  eq(other) { return other.kind === this.kind && other.message === this.message; }
  toDOM() {
    const dot = document.createElement("span");
    dot.className = `cm-marker-dot cm-marker-dot-${this.kind}`;
    dot.textContent = "●";
    dot.title = this.message ? `${this.kind}: ${this.message}` : this.kind;
    return dot;
  }
}

const setMarkers = StateEffect.define();

function buildMarkers(doc, markers) {
  const valid = (markers || []).filter((m) => KINDS.includes(m.kind) && Number.isInteger(m.line) && m.line >= 1 && m.line <= doc.lines);
  valid.sort((a, b) => a.line - b.line || KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind));
  const lines = [], dots = [];
  for (const m of valid) {
    const from = doc.line(m.line).from;
    lines.push(Decoration.line({ class: `cm-marker cm-marker-${m.kind}`, attributes: { "data-marker": m.kind, title: m.message || m.kind } }).range(from));
    if (!dots.length || dots[dots.length - 1].line !== m.line) dots.push({ line: m.line, range: new MarkerDot(m.kind, m.message).range(from) });
  }
  return { lines: Decoration.set(lines, true), dots: RangeSet.of(dots.map((d) => d.range), true) };
}

const markerField = StateField.define({
  create: () => ({ lines: Decoration.none, dots: RangeSet.empty }),
  update(value, tr) {
    let next = { lines: value.lines.map(tr.changes), dots: value.dots.map(tr.changes) }; // markers follow edits
    for (const e of tr.effects) if (e.is(setMarkers)) next = buildMarkers(tr.state.doc, e.value);
    return next;
  },
  provide: (f) => EditorView.decorations.from(f, (v) => v.lines),
});

const markerGutter = gutter({
  class: "cm-marker-gutter",
  markers: (view) => view.state.field(markerField).dots,
  initialSpacer: () => new MarkerDot("race", ""),
});

const lightHighlight = syntaxHighlighting(defaultHighlightStyle, { fallback: true });
const darkHighlight = syntaxHighlighting(HighlightStyle.define([
  { tag: t.keyword, color: "#c792ea" }, { tag: [t.definitionKeyword, t.moduleKeyword, t.controlKeyword], color: "#c792ea" },
  { tag: [t.string, t.special(t.string)], color: "#c3e88d" }, { tag: t.comment, color: "#8b949e", fontStyle: "italic" },
  { tag: [t.number, t.bool, t.null], color: "#f78c6c" }, { tag: t.operator, color: "#89ddff" },
  { tag: [t.function(t.variableName), t.function(t.definition(t.variableName))], color: "#82aaff" },
  { tag: t.definition(t.variableName), color: "#ffcb6b" }, { tag: t.className, color: "#ffcb6b" },
  { tag: t.propertyName, color: "#addb67" }, { tag: t.meta, color: "#ffcb6b" },
]));

const theme = EditorView.theme({
  "&": {
    height: "100%", fontSize: "var(--st-code-font-size, 14px)", color: "var(--st-text-color)",
    backgroundColor: "var(--st-secondary-background-color)", border: "1px solid var(--st-border-color, rgba(49, 51, 63, 0.2))",
    borderRadius: "var(--st-base-radius, 0.5rem)",
  },
  "&.cm-focused": { outline: "none", borderColor: "var(--st-primary-color)" },
  ".cm-scroller": { overflow: "auto", fontFamily: "var(--st-code-font, 'Source Code Pro', monospace), monospace", lineHeight: "1.5" },
  ".cm-content": { caretColor: "var(--st-text-color)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--st-text-color)" },
  ".cm-gutters": { backgroundColor: "transparent", color: "var(--st-text-color)", opacity: "0.75", border: "none" },
  ".cm-activeLine, .cm-activeLineGutter": { backgroundColor: "rgba(128, 128, 128, 0.10)" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground": { backgroundColor: "rgba(100, 150, 255, 0.30)" },
  ".cm-marker-refusal": { backgroundColor: "rgba(255, 43, 43, 0.16)", boxShadow: "inset 3px 0 #ff2b2b" },
  ".cm-marker-mismatch": { backgroundColor: "rgba(255, 164, 33, 0.18)", boxShadow: "inset 3px 0 #ffa421" },
  ".cm-marker-race": { backgroundColor: "rgba(128, 61, 245, 0.16)", boxShadow: "inset 3px 0 #803df5" },
  ".cm-marker-gutter .cm-gutterElement": { padding: "0 2px 0 4px", cursor: "default" },
  ".cm-marker-dot-refusal": { color: "#ff2b2b" },
  ".cm-marker-dot-mismatch": { color: "#ffa421" },
  ".cm-marker-dot-race": { color: "#803df5" },
});

const instances = new WeakMap(); // parentElement -> {view, id, markers, api, calls}

function create(parentElement, data) {
  const host = document.createElement("div");
  host.className = "kl-code-editor";
  parentElement.appendChild(host);
  const inst = { host, id: data.id, markers: "", api: null, calls: 0, sent: data.value, timer: null };
  const send = () => {
    clearTimeout(inst.timer);
    const text = inst.view.state.doc.toString();
    if (text !== inst.sent) { inst.sent = text; inst.api.setStateValue("value", text); }
    return text;
  };
  const run = () => { const text = send(); inst.api.setTriggerValue("run", text); return true; };
  inst.send = send;
  inst.highlight = new Compartment();
  inst.view = new EditorView({
    parent: host,
    state: EditorState.create({
      doc: data.value,
      extensions: [
        Prec.highest(keymap.of([{ key: "Mod-Enter", run }, { key: "Ctrl-Enter", run }])), // before defaultKeymap's Mod-Enter
        lineNumbers(), markerGutter, highlightActiveLineGutter(), highlightActiveLine(), drawSelection(), history(),
        indentUnit.of("    "), EditorState.tabSize.of(4), indentOnInput(), bracketMatching(),
        python(), inst.highlight.of(data.dark ? darkHighlight : lightHighlight), markerField, theme,
        keymap.of([indentWithTab, ...defaultKeymap, ...historyKeymap]), // Tab indents, Shift-Tab dedents: focus stays
        EditorView.contentAttributes.of({ "aria-label": data.label || "Code editor", "data-testid": "klCodeEditor" }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) { clearTimeout(inst.timer); inst.timer = setTimeout(send, DEBOUNCE_MS); }
        }),
        EditorView.domEventHandlers({ blur: () => { send(); } }),
      ],
    }),
  });
  return inst;
}

function update(inst, data) {
  if (data.id !== inst.id) { // Python replaced the text: load it (undo can bring the old text back)
    inst.id = data.id;
    inst.sent = data.value;
    clearTimeout(inst.timer);
    inst.view.dispatch({ changes: { from: 0, to: inst.view.state.doc.length, insert: data.value } });
    inst.markers = "";
  }
  const markers = JSON.stringify(data.markers || []);
  if (markers !== inst.markers) { inst.markers = markers; inst.view.dispatch({ effects: setMarkers.of(data.markers || []) }); }
  inst.view.dispatch({ effects: inst.highlight.reconfigure(data.dark ? darkHighlight : lightHighlight) });
  inst.host.style.height = `${data.height || 380}px`;
}

export default function (component) {
  const { data, parentElement, setStateValue, setTriggerValue } = component;
  let inst = instances.get(parentElement);
  if (!inst) { inst = create(parentElement, data); instances.set(parentElement, inst); }
  inst.api = { setStateValue, setTriggerValue };
  update(inst, data);
  const call = ++inst.calls;
  return () => { // Streamlit calls this on unmount (or for a call that a newer one overtook: then keep the view)
    if (inst.calls !== call) return;
    clearTimeout(inst.timer);
    inst.view.destroy();
    inst.host.remove();
    instances.delete(parentElement);
  };
}

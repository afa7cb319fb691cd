// Text from outside (paths, names, manifests, servers, URLs) made safe to print or to embed: control
// characters shown as escapes, never sent to the terminal (an ESC from a mirror could rewrite the
// screen), and credentials taken out of URLs. Light: imported by errors, ui and every layer.

/** C0 and C1 control characters (newline and tab included) and DEL. */
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f]/g;
/** The same, less newline and tab (for multi-line text we print ourselves). */
const CONTROL_BUT_LAYOUT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

function escapeChar(c: string): string {
  if (c === "\n") return "\\n";
  if (c === "\t") return "\\t";
  if (c === "\r") return "\\r";
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** `s` with every control character as a visible escape (\n, \x1b, ...): one line, inert on a terminal. */
export function printable(s: string): string {
  return s.replace(CONTROL_ALL, escapeChar);
}

/** `s` with control characters escaped except newline and tab (our own multi-line messages). */
export function printableLines(s: string): string {
  return s.replace(CONTROL_BUT_LAYOUT, escapeChar);
}

/** A URL without its user name and password (`https://u:p@h/x` → `https://h/x`), for messages. */
export function redactUrl(u: string): string {
  try {
    const url = new URL(u);
    if (!url.username && !url.password) return u;
    url.username = "";
    url.password = "";
    return url.toString();
  } catch {
    return u.replace(/\/\/[^/@\s]*@/, "//");
  }
}

/** Every URL with credentials in `s` redacted (for messages built from errors that quote a URL). */
export function redactUrls(s: string): string {
  return s.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1");
}

// Package termsafe makes strings that a worker or a repository supplied safe
// to put on a person's terminal.
//
// The reviewer approves what the screen shows, so the screen must show what
// is. A file name, a commit message, an author, a diff line or an error text
// may carry escape sequences that clear the screen and redraw a different
// push, set the clipboard (OSC 52), hide lines (SGR 8), or bidi overrides
// that reorder what is read. Everything a terminal would interpret is written
// in a visible notation instead:
//
//   - C0 controls and DEL in caret notation: ESC is ^[, NUL is ^@, DEL is ^?;
//   - C1 controls, and format characters that are invisible or change the
//     direction of text (U+202E, U+200B, U+2066, U+FEFF, ...), as <U+202E>;
//   - bytes that are not UTF-8 as <0x9B>.
//
// Line is for one-line fields (names, subjects, flags, errors); Text keeps
// newlines and tabs, for diffs and messages. Colour is airlock's own: callers
// sanitise each fragment first and paint afterwards, so the only escape
// sequences that reach a terminal are the ones airlock wrote.
package termsafe

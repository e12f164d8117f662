// Package diffview is the reviewer's full-screen view of a push's diff
// (the prompt's d key, in approval/review): files in risk order, a big
// file collapsed to one row until opened, a file list to jump through,
// search, and a status line that says where the reviewer is.
//
// It is virtualised: it keeps the diff's text as the request holds it,
// an index of line offsets and each file's range of lines, and draws only
// the rows on the screen, so the first screen of a 300-file, 20,000-line
// push costs the index and one screen, not the whole text coloured. Every
// string from the worker or the repository goes through termsafe as it is
// drawn; the only escape sequences written are the view's own, plain
// VT100/xterm ones (the alternate screen, cursor position, erase line,
// SGR), so it works over any SSH session.
//
// A hunk is worked out when a line of it is first drawn, and cached
// (hunk.go): its line numbers, its removed and added lines paired as
// git's diff-highlight pairs them and their changed words (words.go),
// each side's syntax colour from chroma's lexers, a side lexed as one
// text so that strings and comments over lines colour right, only as far
// as the lines drawn (syntax.go). Drawing (paint.go) gives each byte of a
// row a style and writes runs of the diff's own bytes through termsafe
// in the view's SGR: the lexer's tokens are never written. From 160
// columns, or with s, the rows are laid out side by side
// (sidebyside.go). Colorize is the same drawing for the line prompt.
package diffview

// Package diffview is the reviewer's full-screen view of a push's diff
// (the prompt's d key, in approval/review), where they review: it works
// on a model.Review (approval/review/model), which holds everything the
// reviewer decides (the hunks and lines left out, the comments, the
// viewed marks), and draws it: files in risk order, a big file collapsed
// to one row until opened, a cursor with both sides' line numbers in a
// gutter, a file list to jump through, search, the comments list, and a
// status line that says where the reviewer is. It hands back an Outcome
// (approve, reject with a reason, or nothing); the prompt makes the
// decision of it and the model.
//
// It is virtualised: it keeps the diff's text as the request holds it,
// an index of line offsets, a mark a hunk, and each file's range of
// lines, and draws only
// the rows on the screen, so the first screen of a 300-file, 20,000-line
// push costs the index and one screen, not the whole text coloured. Every
// string from the worker or the repository goes through termsafe as it is
// drawn; the only escape sequences written are the view's own, plain
// VT100/xterm ones (the alternate screen, cursor position, erase line,
// SGR), so it works over any SSH session.
//
// A hunk is worked out when a line of it is first drawn, and cached
// (hunk.go): each side's count of its lines (the syntax colour's index;
// the numbers drawn are the model's Line.Old and New), its removed and added lines paired as
// git's diff-highlight pairs them and their changed words (words.go),
// each side's syntax colour from chroma's lexers, a side lexed as one
// text so that strings and comments over lines colour right, only as far
// as the lines drawn (syntax.go). Drawing (paint.go) gives each byte of a
// row a style and writes runs of the diff's own bytes through termsafe
// in the view's SGR: the lexer's tokens are never written. From 160
// columns, or with s, the rows are laid out side by side
// (sidebyside.go): a row is then not a line, so the cursor, the range's
// mark and what acts under them map rows to lines (offLine, lineOff),
// each side of a row has its own marks and number, and Tab puts the
// cursor on the new side of a changed pair. Colorize is the same drawing
// for the line prompt.
package diffview

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
package diffview

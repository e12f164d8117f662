// Package linediff computes line-based diffs and prints them as unified-diff
// hunks byte-for-byte like git 2.39 does with its default settings (Myers
// algorithm, indent heuristic, 3 lines of context, default function-name
// detection, default whitespace-error highlighting when coloured).
//
// The implementation is written from the published algorithms (E. W. Myers,
// "An O(ND) Difference Algorithm and Its Variations", 1986, with the
// linear-space middle-snake refinement; sliding of change groups; the
// indentation heuristic for choosing among equivalent slides) and matched to
// git by black-box comparison with the git binary. It does not use git's code.
//
// Header writes the lines git prints before a file's hunks ("diff --git",
// modes, index, ---/+++, its "Binary files ... differ"), with paths quoted
// as git's core.quotePath does (QuotePath).
//
// The caller must treat binary content separately: Hunks refuses input that
// git would consider binary (see IsBinary) and returns ErrBinary.
package linediff

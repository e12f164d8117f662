// Package gitignore decides, as git does, which paths of a repository its
// ignore rules exclude: the .gitignore files of the tree and the
// repository's own exclude file (info/exclude). It reads nothing itself: a
// Checker asks its caller for a directory's .gitignore when the descent
// reaches it, so a caller that checks a few paths of a large tree reads
// the .gitignore files along those paths and no other.
//
// The rules are git's own (dir.c and wildmatch.c of git 2.39, checked
// against `git status --ignored` by this package's tests):
//
//   - A line is a pattern unless it is empty or starts with "#". Trailing
//     spaces are dropped unless escaped with a backslash; a trailing CR is
//     dropped; a UTF-8 byte order mark at the start of the file is skipped.
//   - "!" negates (re-includes); "\!" and "\#" start a pattern with a
//     literal "!" or "#".
//   - A trailing "/" makes the pattern match directories only.
//   - A pattern without a slash (other than a trailing one) matches a name
//     at any depth below its .gitignore; one with a slash matches the path
//     relative to the .gitignore's directory, a leading slash only
//     anchoring it there.
//   - Matching is wildmatch with git's pathname rules: "*" and "?" never
//     match "/", "[...]" is a set ("!" or "^" negates it, ranges,
//     "[:alpha:]" and the other classes; never "/"), "\" quotes the next
//     byte, and "**" matches across directories only as a whole segment
//     ("**/a", "a/**", "a/**/b"); elsewhere it is "*". Bytes are compared
//     as bytes: "?" matches one byte, not one character.
//   - Within a file the last matching pattern wins; a deeper .gitignore
//     wins over a shallower one, and every .gitignore over the exclude
//     file.
//   - A directory that is excluded is not descended into: nothing below it
//     can be re-included by a negation, and the .gitignore files inside it
//     are not read.
//
// Whether a path is tracked is not this package's business: git never
// ignores a tracked file, and callers check that first. The user's
// core.excludesFile is not read either: airlock decides by the repository's
// own files only, the same for every user.
//
// Matching is linear in pattern times path: wildmatch is run as a set of
// states over the pattern's tokens, so no pattern a repository supplies can
// make it backtrack. Where git has no bound, this package has two, so that
// a hostile .gitignore cannot make every status slow: a file's first
// 10,000 patterns are read, and a line over 4,096 bytes is skipped.
package gitignore

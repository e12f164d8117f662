// Package hunk takes one file's unified diff apart as git prints it (the
// header and its "@@" hunks), rebuilds a hunk with only some of its
// changed lines, as git add -p's edit does, and applies hunks to a file's
// content with git apply's rules: no fuzz, every context and removed line
// must match exactly, and a hunk may sit a few lines away from where its
// header says (the hunks before it were left out), found by searching
// outward from there as git apply does.
//
// It exists so that a reviewer can accept part of a push: what lands is
// exactly the accepted hunks, applied in order, or an error that names the
// hunk that could not be placed. It depends on nothing but the standard
// library.
package hunk

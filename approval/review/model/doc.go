// Package model is the reviewer's review of one request as data, apart
// from any screen: the request, its commits, their files, each file's
// hunks (named by approval.HunkID) with every line's old and new line
// number; the reviewer's selection of hunks and lines; their comments (a
// line or a range, on either side, edited or deleted before sending);
// the files they marked viewed; the order to review in (risk first); and
// the decision all of it makes, as the gate expects it.
//
// The terminal's full-screen view (approval/review/internal/diffview) and
// the line prompt (approval/review) both work on it, and a web front-end
// can: it does no I/O and draws nothing. Its text is the worker's, raw:
// whoever shows it sanitises it (internal/termsafe).
package model

// Package glob is airlock's one glob engine: the deny list and the file
// tools (list_files, search_files) match paths with it, and the reviewer's
// risk flags match protected branch names with it.
//
// A pattern is a slash-separated list of segments. "**" as a whole segment
// stands for any number of path components (none included); any other
// segment is a path.Match pattern for one component. Matching fills a table
// of (pattern prefix, path prefix) once, so its cost is at most the product
// of the two lengths, whatever the pattern: a pattern of many "**" or "*"
// cannot make it backtrack, and a pattern is at most MaxLen bytes.
//
// The package does not decide what a pattern without a slash means, nor how
// names are normalised: the deny list matches such a pattern against every
// component of canonical names, the file tools against the base name. Both
// build on Compile and the two Match methods.
package glob

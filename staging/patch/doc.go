// Package patch owns what changed between two git trees and how git
// prints it: Trees lists the paths that differ (as Change values, data),
// New and Each make the FilePatch of each (both contents, line counts,
// binary or not as git decides it, the hunks kept when small), and
// Patch.Format writes them byte for byte as `git diff` does, with or
// without colours (through staging/internal/linediff). FileDiffs groups a
// diff by path with its hunks taken apart, as accepting hunks needs.
//
// It reads trees and blobs through a Source (staging.Store is one) and
// keeps nothing between calls. staging keeps the old names (FilePatch,
// Patch, Stats, TreeChange, TextDiff) as aliases, and the methods that
// know an Area's commits and workspace (DiffPatch, EachFilePatch,
// DiffCommit, DiffUnstaged, EachCommitPatch).
package patch

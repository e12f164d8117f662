package approval

import "github.com/airlock-dev/airlock/internal/change"

// RunsPatterns lists the patterns of the table of files that run on
// their own, one per row.
func RunsPatterns() []string {
	out := make([]string, len(runsTable))
	for i, r := range runsTable {
		out[i] = r.pattern + " " + r.code
	}
	return out
}

// RunsRowsFor returns the patterns of the rows that flag f.
func RunsRowsFor(f FileChange, content Content) []string {
	var out []string
	for _, h := range runsHits(f, content) {
		out = append(out, h.rule.pattern+" "+h.rule.code)
	}
	return out
}

// RunsRowsForPath returns the rows that flag adding path p with content
// data.
func RunsRowsForPath(p string, data []byte) []string {
	content := func(q string, newSide bool) ([]byte, bool) {
		if q != p || !newSide {
			return nil, false
		}
		return data, true
	}
	return RunsRowsFor(FileChange{Path: p, Op: change.Create}, content)
}

// VerifyFor checks s as ResolveSigned does, trusting keys, for the
// request of fingerprint fp.
func VerifyFor(s SignedDecision, keys []string, fp string) error {
	trusted := map[string]bool{}
	for _, k := range keys {
		trusted[k] = true
	}
	return s.verify(trusted, fp)
}

// SetTestHookVerified sets f to run in ResolveSigned between its checks
// and the decision's taking effect, until the returned func restores it.
func SetTestHookVerified(f func()) func() {
	testHookVerified = f
	return func() { testHookVerified = nil }
}

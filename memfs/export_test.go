package memfs

// Test-only access to internals that the public API deliberately hides.

// ExactUsage recounts, from scratch, what the live tree holds and what the
// workspace holds in all.
func ExactUsage(w *Workspace) (live, held Usage) { return w.ExactUsage() }

// DirtyLen is how many paths change tracking would look at.
func DirtyLen(w *Workspace) int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cur.dirty.Len()
}

package ledger

// SetHookBeforeAnchor sets testHookBeforeAnchor for one test and returns
// the function that unsets it.
func SetHookBeforeAnchor(f func()) (reset func()) {
	testHookBeforeAnchor = f
	return func() { testHookBeforeAnchor = nil }
}

package shortid

import "github.com/go-git/go-git/v5/plumbing"

// Digits of each abbreviation.
const (
	HashDigits = 7  // a git object id
	HexDigits  = 12 // a ledger hash
)

// Hash is h's first 7 hex digits; the zero hash is "0000000", as git's
// index lines write it.
func Hash(h plumbing.Hash) string { return h.String()[:HashDigits] }

// HashOr is Hash(h), or zero when h is the zero hash: for a ref that did
// not exist, which a message names in words.
func HashOr(h plumbing.Hash, zero string) string {
	if h.IsZero() {
		return zero
	}
	return Hash(h)
}

// Hex is a ledger hash (hex text) cut to its first 12 digits, and "none"
// when there is no hash (an empty ledger's head).
func Hex(s string) string {
	if s == "" {
		return "none"
	}
	return s[:min(HexDigits, len(s))]
}

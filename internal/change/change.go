package change

import "fmt"

// Kind is what a change does to a path. Its numbers are persisted (a staged
// commit's files in a durable session's state): never renumber them.
type Kind uint8

const (
	Create Kind = iota + 1
	Update
	Delete
	// Rename and Copy are a path made from another (its From) as git's
	// rename and copy detection finds them (git diff -M -C): a rename
	// takes the old path away, a copy leaves it.
	Rename
	Copy
)

// String is the change in one word, the same everywhere: in messages, in
// tests and on the wire (a push request's "op").
func (k Kind) String() string {
	if int(k) < len(wire) && k != 0 {
		return wire[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Sign is the one-character mark a list of files shows: + M - R C.
func (k Kind) Sign() string {
	switch k {
	case Create:
		return "+"
	case Delete:
		return "-"
	case Rename:
		return "R"
	case Copy:
		return "C"
	}
	return "M"
}

// wire are the words, as a push request's files have always carried them
// in JSON ("op": "create"); the zero Kind is "" there.
var wire = [...]string{"", "create", "update", "delete", "rename", "copy"}

// MarshalText writes the word, "" for the zero Kind.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(wire) {
		return nil, fmt.Errorf("change: cannot encode %v", k)
	}
	return []byte(wire[k]), nil
}

// UnmarshalText reads the word.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, w := range wire {
		if string(b) == w {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("change: %q is not a kind of change (create, update, delete, rename or copy)", b)
}

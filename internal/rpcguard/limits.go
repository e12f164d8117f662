package rpcguard

import "github.com/airlock-dev/airlock/internal/bytesize"

// Limits bound one message.
type Limits struct {
	// MaxBytes is the most a message may take, its newline not counted.
	MaxBytes int64
	// MaxDepth is how deep objects and arrays may nest, the message itself
	// at depth 1: the count of the MCP SDK, which ends a session past 1000.
	MaxDepth int
	// MaxValues is how many array elements and object members a message
	// may hold in all.
	MaxValues int
	// MaxBatch is how many messages of a batch are answered one by one
	// (batches are refused; a longer one gets a single answer).
	MaxBatch int
	// MaxString is the most one string may decode to (0: no bound): the
	// largest file, since no argument may be larger than a file. It is
	// what lets a message too large for any tool be refused early, before
	// the SDK's decoding (several copies of it) holds it.
	MaxString int64
}

const (
	// DefaultDepth is the MCP SDK's own bound: deeper, it ends the session.
	DefaultDepth = 1000
	// DefaultValues admits a list of every file a workspace may hold
	// (memfs's default MaxFiles); a decoder spends 50 to 100 bytes on a
	// value, so this bounds what one message can make a server allocate.
	DefaultValues = 100_000
	DefaultBatch  = 1000

	// worstEscape is what one byte of a file can cost in a JSON string:
	// any character may be written \uXXXX, six bytes for a one-byte
	// character (a two-byte one costs 3 a byte, three bytes 2, four
	// bytes 3 as a surrogate pair).
	worstEscape = 6
	// envelope is room for the rest of a write_file call: the path
	// (a few KiB at most, also escaped), the method, the id, white space.
	envelope = 1 << 20
)

// ForMaxFile is the bound under which every legal write_file of a file up
// to maxFile bytes fits, whatever its escaping.
func ForMaxFile(maxFile int64) Limits {
	return Limits{MaxBytes: worstEscape*maxFile + envelope, MaxDepth: DefaultDepth, MaxValues: DefaultValues, MaxBatch: DefaultBatch,
		MaxString: maxFile}
}

// String is the size bound for people.
func (l Limits) String() string { return bytesize.Format(l.MaxBytes) }

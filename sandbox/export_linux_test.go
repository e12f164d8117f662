package sandbox

import seccomp "github.com/elastic/go-seccomp-bpf"

// SeccompPolicy is the run's seccomp policy, the table the per-call tests
// are generated from.
func SeccompPolicy() seccomp.Policy { return policy() }

// ForeignABIErrno answers every call of a foreign ABI (x32, i386).
const ForeignABIErrno = foreignABIErrno

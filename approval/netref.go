package approval

import (
	"strconv"
	"strings"
)

// networkRef is a network request's key and fingerprint (its Ref): what
// the reviewer saw and allowed or denied, the command line, the directory
// it runs in and what the run will reach (Reach). A run that differs in
// any of them is another request, asked again: the same line from another
// directory runs another script, and a run after the operator changed
// --run-allow-host reaches what the reviewer was not shown. A denial is
// repeated at once only for the same three, in this session and, from the
// ledger, after a restart. Each part is quoted: no two differ and agree.
func networkRef(req *Request) string {
	return strconv.Quote(req.Command) + " in " + strconv.Quote(req.Dir) + " reaching " + strconv.Quote(strings.Join(req.Reach, " "))
}

// withdrawnAs is ErrWithdrawn in the words of r's kind: a network
// request withdrawn is not a "push request withdrawn" to its worker.
func withdrawnAs(r *Request) error {
	if r.Kind == KindNetwork {
		return networkWithdrawn{}
	}
	return ErrWithdrawn
}

// networkWithdrawn is ErrWithdrawn for a network request.
type networkWithdrawn struct{}

func (networkWithdrawn) Error() string        { return "network request withdrawn" }
func (networkWithdrawn) Is(target error) bool { return target == ErrWithdrawn }

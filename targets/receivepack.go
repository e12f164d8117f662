package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
)

// errReceivePack: git-receive-pack refused or failed.
var errReceivePack = errors.New("git-receive-pack refused the push")

// runReceivePack speaks git's push protocol to `git receive-pack` on the
// repository: it reads the advertised refs, refuses with a *MovedError
// unless ref is at cur, then sends one command (ref from cur to new) with
// the pack that pack writes, and reads git's report. git moves the ref only
// if it still holds cur, under its own lock, and only after its fsck has
// accepted every object. git holds lock too (see pushLock). It runs with
// gitenv's configuration: no hook of the repository's runs.
func (l *Local) runReceivePack(ctx context.Context, lock *os.File, ref string, cur, new plumbing.Hash, pack func(io.Writer) error) error {
	cmd, err := gitenv.Command(ctx, l.path, "receive-pack", l.path)
	if err != nil {
		return err
	}
	inheritLock(cmd, lock)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting git receive-pack: %w", err)
	}
	fail := func(err error) error {
		stdin.Close()
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "proc-receive") || err != nil && strings.Contains(err.Error(), "proc-receive") {
			// receive.procReceiveRefs hands the ref to a hook, which
			// never runs for airlock (gitenv.Keys).
			msg += "; " + procReceiveAdvice
		}
		if strings.Contains(msg, "refusing to update checked out branch") {
			msg += "; " + checkedOutAdvice
		}
		if msg != "" {
			return fmt.Errorf("%w: %v: %s", errReceivePack, err, termsafe.Text(clipText(msg, 2000)))
		}
		return fmt.Errorf("%w: %v", errReceivePack, err)
	}
	adv := packp.NewAdvRefs()
	if err := adv.Decode(stdout); err != nil && !errors.Is(err, packp.ErrEmptyAdvRefs) {
		return fail(fmt.Errorf("reading advertised refs: %w", err))
	}
	transport.FilterUnsupportedCapabilities(adv.Capabilities)
	var advertised plumbing.Hash
	if refs, err := adv.AllReferences(); err == nil {
		if r, ok := refs[plumbing.ReferenceName(ref)]; ok {
			advertised = r.Hash()
		}
	}
	if advertised != cur {
		// Nothing was sent: end the session as git expects, with a flush.
		stdin.Write(pktline.FlushPkt)
		fail(nil)
		return &MovedError{Ref: ref, Expected: cur, Head: advertised}
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	req.Commands = []*packp.Command{{Name: plumbing.ReferenceName(ref), Old: cur, New: new}}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(pack(pw)) }()
	req.Packfile = pr
	if err := req.Encode(stdin); err != nil {
		pr.CloseWithError(err)
		return fail(fmt.Errorf("sending the pack: %w", err))
	}
	if err := stdin.Close(); err != nil {
		return fail(err)
	}
	var report *packp.ReportStatus
	if req.Capabilities.Supports(capability.ReportStatus) {
		report = packp.NewReportStatus()
		if err := report.Decode(stdout); err != nil {
			return fail(fmt.Errorf("reading git's report: %w", err))
		}
	}
	io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if report != nil {
		if err := report.Error(); err != nil {
			return fail(err)
		}
	}
	if werr != nil {
		return fail(werr)
	}
	return nil
}

// procReceiveAdvice is what a push refused for want of the proc-receive
// hook says to do.
const procReceiveAdvice = "the repository's receive.procReceiveRefs hands this ref to its proc-receive hook, " +
	"and airlock runs no program a repository names: push to a branch outside those refs, or have the " +
	"repository's owner remove the setting (git config --unset-all receive.procReceiveRefs)"

// checkedOutAdvice is what a push refused because git takes the branch
// for one checked out in a work tree says to do.
const checkedOutAdvice = "git takes this repository for one with a work tree (its config says core.bare false), " +
	"and airlock's push to a bare target never writes one: if it has a work tree, give it as a \"local\" target " +
	"(its working tree's path); if not, have its owner set it bare (git config core.bare true)"

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

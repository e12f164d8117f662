package rpcguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Reader passes a client's newline-delimited JSON-RPC messages on to a
// decoder, one line per message, except those the scan refuses: each is
// answered on answers (a writer the caller serialises with its other
// output) and dropped. The session behind the decoder never sees them.
type Reader struct {
	src     *bufio.Reader
	lim     Limits
	answers io.Writer
	refused func(why string) // told of each refusal, for the operator; may be nil

	out [][]byte // the message being read, in the pieces it came in
	err error    // the source's, once out is read
}

// NewReader reads messages from r. refused, when not nil, hears why each
// refused message was (the client hears it too).
func NewReader(r io.Reader, answers io.Writer, lim Limits, refused func(why string)) *Reader {
	return &Reader{src: bufio.NewReaderSize(r, 64<<10), lim: lim, answers: answers, refused: refused}
}

// Read hands out the next message that passed, never more than one per
// call: a decoder ahead by a message is never ahead of a refusal.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.out, r.err = r.next()
	}
	n := copy(p, r.out[0])
	if r.out[0] = r.out[0][n:]; len(r.out[0]) == 0 {
		r.out[0] = nil
		r.out = r.out[1:]
	}
	return n, nil
}

// Close does nothing: the source is the caller's.
func (r *Reader) Close() error { return nil }

// next reads lines until one passes, answering the others; it returns
// the passing line with its newline, or the source's error.
func (r *Reader) next() ([][]byte, error) {
	for {
		msg, v, err := readMessage(r.lim, func() ([]byte, bool, error) {
			chunk, err := r.src.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				return chunk, false, nil
			}
			return chunk, true, err
		})
		switch {
		case v.Blank:
		case v.Refused:
			if r.refused != nil {
				r.refused(v.Why)
			}
			if v.Answer != nil {
				if _, werr := r.answers.Write(append(v.Answer, '\n')); werr != nil {
					return nil, werr
				}
			}
		default:
			if last := msg[len(msg)-1]; last[len(last)-1] != '\n' {
				msg = append(msg, []byte{'\n'}) // the last line, without its newline
			}
			return msg, err
		}
		if err != nil {
			return nil, err
		}
	}
}

// readMessage scans one message from next, which returns the next piece
// of it and whether it was the last (a newline or the end of input). The
// pieces are kept while the message may pass, and let go as soon as it
// cannot: a refused message costs at most its size up to the refusal.
func readMessage(lim Limits, next func() (piece []byte, last bool, err error)) ([][]byte, Verdict, error) {
	c := newChecker(lim)
	var keep [][]byte
	var size int64
	tooLarge := false
	for {
		piece, last, err := next()
		size += int64(len(piece))
		body, scanned := size, piece
		if last && len(piece) > 0 && piece[len(piece)-1] == '\n' {
			// The newline is not the message's: a line that ends inside
			// a string ends there, it does not hold a raw newline.
			body, scanned = body-1, piece[:len(piece)-1]
		}
		if body > lim.MaxBytes {
			tooLarge = tooLarge || c.refusal == nil // refused for its size first
			c.refuse(-32600, "the message is larger than %s, the most this server reads in one (six times sandbox.max_file_bytes, "+
				"the worst case of JSON escaping, and 1 MiB for the rest): nothing was done. Every write_file of a file up to "+
				"max_file_bytes fits whatever its escaping; send less at once (edit a large file with several edit_file calls, "+
				"give a run's input as a file in the workspace), or raise max_file_bytes in the worker file", lim)
		}
		c.feed(scanned)
		if c.refusal != nil {
			keep = nil
		} else if len(piece) > 0 {
			keep = append(keep, bytes.Clone(piece))
		}
		if last {
			v := c.finish()
			v.TooLarge = tooLarge && v.Refused
			if err != nil && !errors.Is(err, io.EOF) && !v.Blank {
				// A read that failed mid-line: what came is not a message.
				return nil, Verdict{Blank: true}, err
			}
			return keep, v, err
		}
	}
}

// Body is an HTTP request's body once scanned.
type Body struct {
	Verdict
	data [][]byte
}

// Reader reads the body again, for the SDK.
func (b *Body) Reader() io.Reader {
	rs := make([]io.Reader, len(b.data))
	for i, d := range b.data {
		rs[i] = bytes.NewReader(d)
	}
	return io.MultiReader(rs...)
}

// ReadBody scans one message that is a whole HTTP body (newlines are
// white space there).
func ReadBody(r io.Reader, lim Limits) (*Body, error) {
	buf := make([]byte, 64<<10)
	data, v, err := readMessage(lim, func() ([]byte, bool, error) {
		n, err := io.ReadFull(r, buf)
		switch {
		case err == nil:
			return buf[:n], false, nil
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return buf[:n], true, nil
		}
		return buf[:n], true, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return &Body{Verdict: v, data: data}, nil
}

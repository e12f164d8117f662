package rpcguard

import (
	"fmt"

	"github.com/airlock-dev/airlock/internal/bytesize"
)

// The scan's tokens: strings (escapes, UTF-8, their decoded length) and
// numbers, read a byte at a time as step hands them over.

// stepString reads a byte inside a string: an escape, a \u escape's hex
// digits, or a UTF-8 sequence's continuation.
func (c *checker) stepString(b byte, pos int64) {
	switch c.st {
	case stString:
		switch {
		case b == '"':
			c.endString()
		case b == '\\':
			c.st = stEscape
		case b < 0x20:
			c.syntax(pos, "control character %s inside a string (write it escaped, as \\u%04x)", show(b), b)
		case b >= 0x80:
			c.utfStart(b, pos)
			c.strGrow(1, pos)
		default:
			c.strGrow(1, pos)
		}
	case stEscape:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			c.st = stString
			c.strGrow(1, pos)
		case 'u':
			c.st, c.hex, c.hexVal = stHex, 4, 0
		default:
			c.syntax(pos, "invalid escape \\%s in a string", showRaw(b))
		}
	case stHex:
		if !isHex(b) {
			c.syntax(pos, "%s in a \\u escape, where a hex digit must be", show(b))
			return
		}
		c.hexVal = c.hexVal<<4 | rune(hexDigit(b))
		if c.hex--; c.hex == 0 {
			c.st = stString
			c.strGrow(escapedLen(c.hexVal), pos)
		}
	case stUTF8:
		if b < c.utfLo || b > c.utfHi {
			c.syntax(pos, "a byte that is not UTF-8 (0x%02X) inside a string", b)
			return
		}
		c.utfLo, c.utfHi = 0x80, 0xBF
		c.strGrow(1, pos)
		if c.utf--; c.utf == 0 {
			c.st = stString
		}
	}
}

// stepNumber reads a byte of a number, or the byte that ends it (read
// again, by feed, as what follows).
func (c *checker) stepNumber(b byte, pos int64) {
	switch c.st {
	case stNumMinus:
		switch {
		case b == '0':
			c.st = stNumZero
		case b >= '1' && b <= '9':
			c.st = stNumInt
		default:
			c.syntax(pos, "%s after '-', where a digit must be", show(b))
		}
	case stNumZero, stNumInt:
		switch {
		case b >= '0' && b <= '9' && c.st == stNumInt:
		case b >= '0' && b <= '9':
			c.syntax(pos, "a number with a leading zero")
		case b == '.':
			c.st = stNumDot
		case b == 'e' || b == 'E':
			c.st = stNumE
		default:
			c.endNumber(true)
		}
	case stNumDot:
		if b < '0' || b > '9' {
			c.syntax(pos, "%s after a decimal point, where a digit must be", show(b))
			return
		}
		c.st = stNumFrac
	case stNumFrac:
		switch {
		case b >= '0' && b <= '9':
		case b == 'e' || b == 'E':
			c.st = stNumE
		default:
			c.endNumber(true)
		}
	case stNumE:
		switch {
		case b == '+' || b == '-':
			c.st = stNumESign
		case b >= '0' && b <= '9':
			c.st = stNumExp
		default:
			c.syntax(pos, "%s in an exponent, where a digit must be", show(b))
		}
	case stNumESign:
		if b < '0' || b > '9' {
			c.syntax(pos, "%s in an exponent, where a digit must be", show(b))
			return
		}
		c.st = stNumExp
	case stNumExp:
		if b < '0' || b > '9' {
			c.endNumber(true)
		}
	}
}

// utfStart checks the first byte of a multi-byte UTF-8 sequence and what
// the next must be (no overlong forms, no surrogates, nothing past
// U+10FFFF), as unicode/utf8 decodes.
func (c *checker) utfStart(b byte, pos int64) {
	c.utfLo, c.utfHi = 0x80, 0xBF
	switch {
	case b >= 0xC2 && b <= 0xDF:
		c.utf = 1
	case b == 0xE0:
		c.utf, c.utfLo = 2, 0xA0
	case b == 0xED:
		c.utf, c.utfHi = 2, 0x9F
	case b >= 0xE1 && b <= 0xEF:
		c.utf = 2
	case b == 0xF0:
		c.utf, c.utfLo = 3, 0x90
	case b == 0xF4:
		c.utf, c.utfHi = 3, 0x8F
	case b >= 0xF1 && b <= 0xF3:
		c.utf = 3
	default:
		c.syntax(pos, "a byte that is not UTF-8 (0x%02X) inside a string", b)
		return
	}
	c.st = stUTF8
}

// strGrow counts n more bytes of the string being read, as it decodes.
func (c *checker) strGrow(n, pos int64) {
	c.strLen += n
	if c.lim.MaxString > 0 && c.strLen > c.lim.MaxString && c.refusal == nil {
		c.refuse(-32600, "the message holds a string longer than %s (at byte %d), sandbox.max_file_bytes: no file may be larger, so no "+
			"argument can be; nothing was done. Split the content into several files of at most that size (or ask the operator "+
			"to raise sandbox.max_file_bytes in the worker file), and give a run a large input as a file in the workspace "+
			"(write_file, then command \"cmd < file\"), or as several (\"cat part1 part2 | cmd\")", bytesize.Format(c.lim.MaxString), pos)
	}
}

// escapedLen is what a \u escape of code unit u decodes to in UTF-8; a
// surrogate counts as half of its pair (a lone one decodes to U+FFFD,
// three bytes: counted low, never refusing what fits).
func escapedLen(u rune) int64 {
	switch {
	case u < 0x80:
		return 1
	case u < 0x800:
		return 2
	case u >= 0xD800 && u <= 0xDFFF:
		return 2
	}
	return 3
}

func hexDigit(b byte) byte {
	switch {
	case b >= 'a':
		return b - 'a' + 10
	case b >= 'A':
		return b - 'A' + 10
	}
	return b - '0'
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// show names a byte for an error message, never writing it raw.
func show(b byte) string {
	if b >= 0x21 && b < 0x7f {
		return fmt.Sprintf("'%c'", b)
	}
	return fmt.Sprintf("byte 0x%02X", b)
}

func showRaw(b byte) string {
	if b >= 0x21 && b < 0x7f {
		return string(b)
	}
	return fmt.Sprintf("(byte 0x%02X)", b)
}

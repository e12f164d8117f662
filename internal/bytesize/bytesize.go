package bytesize

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Format renders n bytes with binary units; whole multiples of a unit have
// no decimals, so a configured limit reads as it was written.
func Format(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	if n%div == 0 {
		return fmt.Sprintf("%d %ciB", n/div, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

var sizeRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?$`)

// Parse reads a size as people write it: "10MiB", "512 KB", "1048576".
func Parse(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size; write it like 10MiB, 512KB or 1048576", s)
	}
	num, _ := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	n := num * mult
	if n < 1 || n > 1<<40 {
		return 0, fmt.Errorf("%q is out of range (1 byte to 1 TiB)", s)
	}
	return int64(n), nil
}

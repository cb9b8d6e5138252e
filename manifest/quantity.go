package manifest

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// memorySuffixes are the accepted memory units, binary and decimal.
var memorySuffixes = []struct {
	suffix string
	factor int64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
}

// ParseMemory parses a memory quantity: a number of bytes, optionally with
// one of the suffixes Ki Mi Gi Ti (powers of 1024) or K M G T (powers of
// 1000). Fractions are allowed as long as the result is a whole number of
// bytes ("1.5Gi"). "0" means unlimited.
func ParseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, factor := s, int64(1)
	for _, u := range memorySuffixes {
		if strings.HasSuffix(s, u.suffix) {
			num, factor = strings.TrimSuffix(s, u.suffix), u.factor
			break
		}
	}
	r, err := parseDecimal(num)
	if err != nil {
		return 0, fmt.Errorf("invalid memory quantity %q: use bytes or a number with Ki, Mi, Gi, Ti, K, M, G or T (e.g. 512Mi)", s)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("invalid memory quantity %q: must not be negative", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(factor))
	if !r.IsInt() {
		return 0, fmt.Errorf("invalid memory quantity %q: not a whole number of bytes", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("invalid memory quantity %q: too large", s)
	}
	return r.Num().Int64(), nil
}

// ParseCPUs parses a CPU quantity into nano-CPUs: "0.5" or "2" CPUs, or
// millicores "500m". "0" means unlimited.
func ParseCPUs(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, factor := s, int64(1e9)
	if strings.HasSuffix(s, "m") {
		num, factor = strings.TrimSuffix(s, "m"), 1e6
	}
	r, err := parseDecimal(num)
	if err != nil {
		return 0, fmt.Errorf("invalid cpus %q: use a number of CPUs (\"0.5\") or millicores (\"500m\")", s)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("invalid cpus %q: must not be negative", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(factor))
	if !r.IsInt() {
		return 0, fmt.Errorf("invalid cpus %q: finer than one nano-CPU", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("invalid cpus %q: too large", s)
	}
	return r.Num().Int64(), nil
}

// parseDecimal accepts only plain decimal notation: big.Rat alone would also
// take fractions ("1/2") and exponents, which no user means in a manifest.
func parseDecimal(s string) (*big.Rat, error) {
	if s == "" || len(s) > 40 || strings.ContainsAny(s, "/eE_xX") {
		return nil, errors.New("not a decimal number")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, errors.New("not a decimal number")
	}
	return r, nil
}

// FormatMemory renders bytes with the largest binary unit that divides them
// exactly, so FormatMemory(ParseMemory(x)) round-trips: 536870912 -> "512Mi".
func FormatMemory(b int64) string {
	if b == 0 {
		return "0"
	}
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b%u.factor == 0 {
			return strconv.FormatInt(b/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}

// FormatCPUs renders nano-CPUs as an exact CPU count: 500000000 -> "0.5".
func FormatCPUs(nano int64) string {
	whole, frac := nano/1e9, nano%1e9
	if frac == 0 {
		return strconv.FormatInt(whole, 10)
	}
	if frac < 0 {
		frac = -frac
	}
	fs := strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
	sign := ""
	if nano < 0 && whole == 0 {
		sign = "-"
	}
	return sign + strconv.FormatInt(whole, 10) + "." + fs
}

// MinMemory is the smallest memory limit the Docker Engine accepts.
const MinMemory = 6 << 20

package envconf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// String declares a text variable stored in p; check, when not nil, refuses a value.
func String(p *string, name, def, help string, check func(string) error) Setting {
	return Setting{Name: name, Default: def, Help: help, Parse: func(v string) error {
		if check != nil {
			if err := check(v); err != nil {
				return err
			}
		}
		*p = v
		return nil
	}}
}

// Bool declares a true/false variable (also 1/0, t/f) stored in p.
func Bool(p *bool, name string, def bool, help string) Setting {
	return Setting{Name: name, Default: strconv.FormatBool(def), Help: help, Parse: func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
		*p = b
		return nil
	}}
}

// Int declares an integer variable in [lo, hi] stored in p; hi 0 means no ceiling.
func Int(p *int, name string, def, lo, hi int, help string) Setting {
	bounds := fmt.Sprintf("at least %d", lo)
	if hi > 0 {
		bounds = fmt.Sprintf("%d to %d", lo, hi)
	}
	return Setting{Name: name, Default: strconv.Itoa(def), Help: help, Bounds: bounds, Parse: func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || (hi > 0 && n > hi) {
			return fmt.Errorf("want an integer %s, got %q", bounds, v)
		}
		*p = n
		return nil
	}}
}

// Duration declares a Go duration ("500ms", "30s", "720h") of at least floor, stored
// in p. The floor refuses a unit slip (1ns where 1s was meant) that would turn a wait
// into a busy loop.
func Duration(p *time.Duration, name string, def, floor time.Duration, help string) Setting {
	bounds := "at least " + FormatDuration(floor)
	return Setting{Name: name, Default: FormatDuration(def), Help: help, Bounds: bounds, Parse: func(v string) error {
		d, err := parseDuration(v, floor)
		if err != nil {
			return err
		}
		*p = d
		return nil
	}}
}

// Durations declares a comma-separated list of durations, each at least floor,
// stored in p.
func Durations[S ~[]time.Duration](p *S, name string, def S, floor time.Duration, help string) Setting {
	parts := make([]string, len(def))
	for i, d := range def {
		parts[i] = FormatDuration(d)
	}
	bounds := "each at least " + FormatDuration(floor)
	return Setting{Name: name, Default: strings.Join(parts, ","), Help: help, Bounds: bounds, Parse: func(v string) error {
		var out S
		for i, part := range strings.Split(v, ",") {
			d, err := parseDuration(strings.TrimSpace(part), floor)
			if err != nil {
				return fmt.Errorf("step %d: %w", i+1, err)
			}
			out = append(out, d)
		}
		*p = out
		return nil
	}}
}

// parseDuration parses v and refuses anything below floor.
func parseDuration(v string, floor time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 5s or 500ms, got %q", v)
	}
	if d < floor {
		return 0, fmt.Errorf("%s is below the floor of %s", FormatDuration(d), FormatDuration(floor))
	}
	return d, nil
}

// FormatDuration writes d as it is best typed: 5m, 4h, 720h, 1h30m, 100ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

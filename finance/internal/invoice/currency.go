package invoice

import (
	_ "embed"
	"strings"
)

//go:embed currencies.txt
var currencyList string

// currencies is the set of codes an invoice may be issued in, read once from the
// embedded list; lines starting with # are comments.
var currencies = func() map[string]bool {
	set := map[string]bool{}
	for line := range strings.Lines(currencyList) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, code := range strings.Fields(line) {
			set[code] = true
		}
	}
	return set
}()

// IsCurrency reports whether code is an active ISO 4217 currency code (upper case).
func IsCurrency(code string) bool { return currencies[code] }

package pgdb

import "regexp"

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,50}$`)

// ValidIdentifier reports whether name may be written into SQL as a table or column
// name without quoting: a lowercase letter or underscore, then lowercase letters,
// digits and underscores, 51 bytes at most. The bound leaves PostgreSQL's 63 bytes
// room for the names the kit's packages derive from a table's (<table>_created_idx,
// <table>_archive). Every kit package that is given a table name checks it here.
func ValidIdentifier(name string) bool { return identifier.MatchString(name) }

package envconf

import (
	"encoding/json"
	"io"
	"slices"
)

// Variable is one setting as documentation shows it: what Help prints, as data, so
// a table generated elsewhere (a README) comes from the same declarations as --help.
type Variable struct {
	Name string `json:"name"`
	// Default is the value used when the variable is unset, as it is written in the
	// environment, or, when Derived, a description of how it is computed; "" is none.
	Default string `json:"default,omitempty"`
	Derived bool   `json:"derived,omitempty"`
	Help    string `json:"help"`
	Bounds  string `json:"bounds,omitempty"`
	// Secret says NAME_FILE may name a file holding the value instead.
	Secret   bool     `json:"secret,omitempty"`
	Required []string `json:"required,omitempty"`
}

// Program is every variable one binary reads, under the binary's name.
type Program struct {
	Name      string     `json:"program"`
	Variables []Variable `json:"variables"`
}

// Program returns the set as the variables of the binary called name, in
// declaration order.
func (s Set) Program(name string) Program {
	p := Program{Name: name, Variables: make([]Variable, 0, len(s.Settings))}
	for _, st := range s.Settings {
		p.Variables = append(p.Variables, Variable{
			Name: st.Name, Default: st.Default, Derived: st.DefaultFrom != nil, Help: st.Help,
			Bounds: st.Bounds, Secret: st.Secret, Required: slices.Clone(st.Required),
		})
	}
	return p
}

// WriteJSON writes p to w as indented JSON, for a binary's `help --json`.
func WriteJSON(w io.Writer, p Program) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

package strict

import (
	"reflect"
	"strings"
	"sync"
	"unicode"
)

// fieldSet is what encoding/json binds the members of an object to for one struct
// type: its fields by JSON name, embedded structs' fields promoted.
type fieldSet struct {
	byName map[string]reflect.Type
	// flat says no field binds members of its own: each takes a scalar, a
	// json.RawMessage, an interface or a type that unmarshals itself, none of which
	// the walk checks beyond duplicates and depth.
	flat bool
}

// folds reports whether name matches a field only when case is ignored, the match
// encoding/json would make after the exact one failed.
func (fs *fieldSet) folds(name string) bool {
	for known := range fs.byName {
		if strings.EqualFold(known, name) {
			return true
		}
	}
	return false
}

var fieldSets sync.Map // reflect.Type -> *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs, _ := fieldSets.LoadOrStore(t, collect(t))
	return fs.(*fieldSet)
}

// candidate is a field that may bind a name, found depth embeddings down.
type candidate struct {
	typ    reflect.Type
	depth  int
	tagged bool
}

// collect applies encoding/json's rules: exported fields, or embedded structs; a
// json:"-" field is skipped; an untagged embedded struct promotes its fields; of the
// fields claiming one name, the shallowest wins, then the only tagged one, and a tie
// binds none.
func collect(t reflect.Type) *fieldSet {
	claims := map[string][]candidate{}
	visited := map[reflect.Type]bool{}
	next := []reflect.Type{t}
	for depth := 0; len(next) > 0; depth++ {
		level := next
		next = nil
		for _, st := range level {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if !sf.IsExported() && !(sf.Anonymous && ft.Kind() == reflect.Struct) {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, ft)
					continue
				}
				if !sf.IsExported() {
					continue
				}
				tagged := name != ""
				if !tagged {
					name = sf.Name
				}
				claims[name] = append(claims[name], candidate{typ: sf.Type, depth: depth, tagged: tagged})
			}
		}
	}
	fs := &fieldSet{byName: make(map[string]reflect.Type, len(claims)), flat: true}
	for name, cs := range claims {
		if typ, ok := dominant(cs); ok {
			fs.byName[name] = typ
			fs.flat = fs.flat && bindsNoMembers(typ)
		}
	}
	return fs
}

// bindsNoMembers reports whether a value bound to t is checked for duplicates and
// depth only: t binds no object members or array elements to types of its own.
func bindsNoMembers(t reflect.Type) bool {
	t = bound(t)
	if t == nil || t == rawMessageType {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return false
	}
	return true
}

// dominant is the field that binds a name among the candidates claiming it.
func dominant(cs []candidate) (reflect.Type, bool) {
	var best []candidate
	for _, c := range cs {
		switch {
		case len(best) == 0 || c.depth < best[0].depth:
			best = []candidate{c}
		case c.depth == best[0].depth:
			best = append(best, c)
		}
	}
	if len(best) == 1 {
		return best[0].typ, true
	}
	var tagged []candidate
	for _, c := range best {
		if c.tagged {
			tagged = append(tagged, c)
		}
	}
	if len(tagged) == 1 {
		return tagged[0].typ, true
	}
	return nil, false
}

// validTag reports whether encoding/json takes s as a member name rather than
// falling back to the field's name.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

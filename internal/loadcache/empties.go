package loadcache

import "reflect"

// gob does not tell an empty slice or map from a nil one, but the model
// does (a nil list marshals as JSON null): the paths of the empty ones are
// stored beside it and made empty again after decoding. store checks the
// round trip, so anything else gob would change is never stored.

// step is one step of a path into the model: a struct field (F), a slice
// index (I) or a string map key (K).
type step struct {
	Kind  byte
	Index int
	Key   string
}

// findEmpties appends the paths of the non-nil empty slices and maps
// under v.
func findEmpties(v reflect.Value, path []step, out *[][]step) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				findEmpties(v.Field(i), append(path, step{Kind: 'F', Index: i}), out)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if v.Len() == 0 {
			*out = append(*out, append([]step(nil), path...))
			return
		}
		for i := range v.Len() {
			findEmpties(v.Index(i), append(path, step{Kind: 'I', Index: i}), out)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		if v.Len() == 0 {
			*out = append(*out, append([]step(nil), path...))
			return
		}
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			findEmpties(iter.Value(), append(path, step{Kind: 'K', Key: iter.Key().String()}), out)
		}
	}
}

// restoreEmpty makes the slice or map at path under v empty (not nil).
func restoreEmpty(v reflect.Value, path []step) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if len(path) == 0 {
		switch {
		case v.Kind() == reflect.Slice && v.IsNil() && v.CanSet():
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		case v.Kind() == reflect.Map && v.IsNil() && v.CanSet():
			v.Set(reflect.MakeMap(v.Type()))
		}
		return
	}
	s := path[0]
	switch {
	case s.Kind == 'F' && v.Kind() == reflect.Struct && s.Index < v.NumField():
		restoreEmpty(v.Field(s.Index), path[1:])
	case s.Kind == 'I' && v.Kind() == reflect.Slice && s.Index < v.Len():
		restoreEmpty(v.Index(s.Index), path[1:])
	case s.Kind == 'K' && v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		k := reflect.ValueOf(s.Key).Convert(v.Type().Key())
		e := v.MapIndex(k)
		if !e.IsValid() {
			return
		}
		c := reflect.New(e.Type()).Elem()
		c.Set(e)
		restoreEmpty(c, path[1:])
		v.SetMapIndex(k, c)
	}
}

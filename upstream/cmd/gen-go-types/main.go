// Command gen-go-types records, from the Go types kube-apiserver decodes into,
// what a JSON body meets on its way through them: each field's Go type (what
// the decoder refuses a value for) and whether Go's encoder leaves it out at
// its zero value (`omitempty` on a field that is not a pointer).
//
//	go run ./cmd/gen-go-types > ../fixtures/k8s/go-types.json
//
// The output maps each OpenAPI definition name (io.k8s.api.core.v1.Pod) to its
// JSON fields: [zero, child, type]. zero says what Go leaves out: "string", "bool",
// "number", "list" or "map" for an omitempty field of that kind (its zero value
// or null), "nil" for an omitempty pointer or interface (null only), "" for a
// field always written. child is the definition of the struct the field holds,
// after "[]" for each list and "{}" for each map it is held in, unless that
// struct marshals itself (Time, Quantity, IntOrString, RawExtension), or "".
// type is the Go type, as the decoder's errors name it, with what it accepts:
// "int32:int32", "[]v1.Container:slice|v1.Container:struct",
// "v1.ResourceList:map|resource.Quantity:quantity" (see goType).
package main

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

type field [3]string

var defs = map[string]map[string]field{}

// name is the OpenAPI definition name of a named Go type.
func name(t reflect.Type) string {
	path := t.PkgPath()
	host, rest, _ := strings.Cut(path, "/")
	parts := strings.Split(host, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}

// child is the struct a field's value holds, through pointers, lists and
// maps, and the way there: "[]" for a list's items, "{}" for a map's values.
func child(t reflect.Type) (string, reflect.Type) {
	via := ""
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				return "", nil // []byte: a base64 string
			}
			via += "[]"
			t = t.Elem()
		case reflect.Map:
			via += "{}"
			t = t.Elem()
		case reflect.Struct:
			return via, t
		default:
			return "", nil
		}
	}
}

func zero(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list"
	case reflect.Map:
		return "map"
	case reflect.Pointer, reflect.Interface:
		return "nil"
	}
	return ""
}

// fields adds the JSON fields of struct t (embedded inline structs' too) to out.
func fields(t reflect.Type, out map[string]field) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jname, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && jname == "" {
			if _, s := child(f.Type); s != nil {
				fields(s, out)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if jname == "" {
			jname = f.Name
		}
		z := ""
		if strings.Contains(","+opts+",", ",omitempty,") {
			z = zero(f.Type)
		}
		// omitzero (Go 1.24) leaves out a zero struct: a zero Time, as null.
		if z == "" && strings.Contains(","+opts+",", ",omitzero,") {
			z = "nil"
		}
		c := ""
		if via, s := child(f.Type); s != nil && s.PkgPath() != "" && !marshals(s) {
			c = via + name(s)
			walk(s)
		}
		out[jname] = field{z, c, goType(f.Type)}
	}
}

var (
	quantity    = reflect.TypeOf(resource.Quantity{})
	intOrString = reflect.TypeOf(intstr.IntOrString{})
	times       = []reflect.Type{reflect.TypeOf(metav1.Time{}), reflect.TypeOf(metav1.MicroTime{})}
)

// kind is what the decoder accepts for a type: a reflect kind, or one of the
// types that decode themselves (quantity, intorstring, time, bytes, any).
func kind(t reflect.Type) string {
	switch {
	case t == quantity:
		return "quantity"
	case t == intOrString:
		return "intorstring"
	case t == times[0] || t == times[1]:
		return "time"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "bytes"
	case t.Kind() == reflect.Interface || (t.Kind() == reflect.Struct && marshals(t)):
		return "any"
	case t.Kind() == reflect.Array:
		return "slice"
	}
	return t.Kind().String()
}

// goType is the chain of types a field's value goes through, as the
// decoder's errors name them, each with its kind ("type:kind", "|" between
// a list or map and its items): "[]string:slice|string:string".
func goType(t reflect.Type) string {
	parts := []string{}
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		k := kind(t)
		parts = append(parts, t.String()+":"+k)
		if k != "slice" && k != "map" {
			return strings.Join(parts, "|")
		}
		t = t.Elem()
	}
}

var marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// marshals: the type writes its own JSON, a leaf to the walk.
func marshals(t reflect.Type) bool {
	return t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)
}

func walk(t reflect.Type) {
	n := name(t)
	if _, seen := defs[n]; seen {
		return
	}
	out := map[string]field{}
	defs[n] = out
	fields(t, out)
}

func main() {
	for _, t := range scheme.Scheme.AllKnownTypes() {
		walk(t)
	}
	for _, o := range []any{apiextv1.CustomResourceDefinition{}, apiextv1.CustomResourceDefinitionList{},
		apiregv1.APIService{}, apiregv1.APIServiceList{}} {
		walk(reflect.TypeOf(o))
	}
	// One definition a line, sorted, so a new release shows as a small diff.
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []string{}
	for _, n := range names {
		k, _ := json.Marshal(n)
		v, err := json.Marshal(defs[n])
		if err != nil {
			panic(err)
		}
		out = append(out, string(k)+":"+string(v))
	}
	os.Stdout.WriteString("{\n" + strings.Join(out, ",\n") + "\n}\n")
}

package manifest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/go-json-experiment/json/jsontext"
)

// The file format groups items by group/version and then namespace, so that those
// three strings are written once per group rather than once per item:
//
//	{"formatVersion":"1","itemCount":1,"groupVersions":[
//	  {"group":"apps","version":"v1","namespaces":[
//	    {"namespace":"shop","items":[
//	      {"kind":"Deployment","resource":"deployments","name":"web","uid":"…",
//	       "labels":{"app":"web"},"ownerUIDs":["…"]}]}]}]}
//
// A backup that holds some group-resources at more than one version says so in a
// "resources" member, written only when SetVersions recorded something:
//
//	"resources":[{"group":"apps","resource":"deployments","versions":["v1","v1beta2"],"preferred":"v1"}]
//
// Members may come in any order, and unknown members are skipped, so a newer writer's
// additions do not break this reader.

// Encode writes m to w as manifest.json, item by item.
func Encode(w io.Writer, m *Manifest) error {
	enc := jsontext.NewEncoder(w)
	e := encoder{enc: enc}
	e.tok(jsontext.BeginObject)
	e.str("formatVersion")
	e.str(FormatVersion)
	e.str("itemCount") // a sizing hint for readers
	e.tok(jsontext.Int(int64(m.Len())))
	e.str("groupVersions")
	e.tok(jsontext.BeginArray)
	var prev Group
	first := true
	for g := range m.Groups() {
		sameGV := !first && prev.Group == g.Group && prev.Version == g.Version
		if !first {
			e.tok(jsontext.EndArray) // items
			e.tok(jsontext.EndObject)
			if !sameGV {
				e.tok(jsontext.EndArray) // namespaces
				e.tok(jsontext.EndObject)
			}
		}
		if !sameGV {
			e.tok(jsontext.BeginObject)
			e.str("group")
			e.str(g.Group)
			e.str("version")
			e.str(g.Version)
			e.str("namespaces")
			e.tok(jsontext.BeginArray)
		}
		e.tok(jsontext.BeginObject)
		e.str("namespace")
		e.str(g.Namespace)
		e.str("items")
		e.tok(jsontext.BeginArray)
		for _, it := range g.Items {
			e.item(it)
		}
		prev, first = g, false
	}
	if !first {
		e.tok(jsontext.EndArray)
		e.tok(jsontext.EndObject)
		e.tok(jsontext.EndArray)
		e.tok(jsontext.EndObject)
	}
	e.tok(jsontext.EndArray)
	e.resources(m)
	e.aliases(m)
	e.tok(jsontext.EndObject)
	return e.err
}

// aliases writes the copies folded into objects served under two group-resources, in
// group, version, namespace, resource and name order, each with all its fields.
func (e *encoder) aliases(m *Manifest) {
	if len(m.aliases) == 0 {
		return
	}
	var copies []*Item
	for _, cs := range m.aliases {
		copies = append(copies, cs...)
	}
	slices.SortFunc(copies, compareItems)
	e.str("aliases")
	e.tok(jsontext.BeginArray)
	for _, it := range copies {
		e.tok(jsontext.BeginObject)
		for _, f := range [...][2]string{{"group", it.Group}, {"version", it.Version}, {"namespace", it.Namespace}} {
			e.str(f[0])
			e.str(f[1])
		}
		e.fields(it)
		e.tok(jsontext.EndObject)
	}
	e.tok(jsontext.EndArray)
}

// resources writes the versions recorded by SetVersions, in group-resource order.
func (e *encoder) resources(m *Manifest) {
	if len(m.versions) == 0 {
		return
	}
	e.str("resources")
	e.tok(jsontext.BeginArray)
	for _, r := range m.Resources() {
		if _, recorded := m.versions[r.GroupResource]; !recorded {
			continue
		}
		e.tok(jsontext.BeginObject)
		e.str("group")
		e.str(r.Group)
		e.str("resource")
		e.str(r.Resource)
		e.str("versions")
		e.tok(jsontext.BeginArray)
		for _, v := range r.Versions {
			e.str(v)
		}
		e.tok(jsontext.EndArray)
		e.str("preferred")
		e.str(r.Preferred)
		e.tok(jsontext.EndObject)
	}
	e.tok(jsontext.EndArray)
}

type encoder struct {
	enc *jsontext.Encoder
	err error
}

func (e *encoder) tok(t jsontext.Token) {
	if e.err == nil {
		e.err = e.enc.WriteToken(t)
	}
}

func (e *encoder) str(s string) { e.tok(jsontext.String(s)) }

func (e *encoder) item(it *Item) {
	e.tok(jsontext.BeginObject)
	e.fields(it)
	e.tok(jsontext.EndObject)
}

// fields writes what an item records beyond its group, version and namespace.
func (e *encoder) fields(it *Item) {
	for _, f := range [...][2]string{{"kind", it.Kind}, {"resource", it.Resource}, {"name", it.Name}, {"uid", string(it.UID)}} {
		e.str(f[0])
		e.str(f[1])
	}
	for _, p := range [...]struct {
		name  string
		pairs Pairs
	}{{"labels", it.Labels}, {"annotations", it.Annotations}} {
		if len(p.pairs) == 0 {
			continue
		}
		e.str(p.name)
		e.tok(jsontext.BeginObject)
		for _, kv := range p.pairs {
			e.str(kv.Key)
			e.str(kv.Value)
		}
		e.tok(jsontext.EndObject)
	}
	if len(it.OwnerUIDs) > 0 {
		e.str("ownerUIDs")
		e.tok(jsontext.BeginArray)
		for _, uid := range it.OwnerUIDs {
			e.str(string(uid))
		}
		e.tok(jsontext.EndArray)
	}
}

// EncodeGzip writes m to w as manifest.json.gz.
func EncodeGzip(w io.Writer, m *Manifest) error {
	zw := gzip.NewWriter(w)
	if err := Encode(zw, m); err != nil {
		return err
	}
	return zw.Close()
}

// WriteFile writes m to path, gzip-compressed when path ends in ".gz". It writes a
// temporary file beside path and renames it, so a crash never leaves half a manifest.
func WriteFile(path string, m *Manifest) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if strings.HasSuffix(path, ".gz") {
		err = EncodeGzip(bw, m)
	} else {
		err = Encode(bw, m)
	}
	if err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ReadFile reads a manifest.json or manifest.json.gz (detected by content, not name).
func ReadFile(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Command image writes restoregraph's controller image as an OCI image layout, without
// a container daemon (make image runs it). Push it with any OCI tool, for example
// `crane push out/image REGISTRY/restoregraph:VERSION` or `skopeo copy --all
// oci:out/image docker://REGISTRY/restoregraph:VERSION`.
//
//	image -out DIR -version V -ca FILE -platform linux/amd64=BINARY [-velero linux/amd64=VELERO] [-platform linux/arm64=BINARY ...]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/restoregraph/restoregraph/release/image"
)

type platforms []image.Platform

func (p *platforms) String() string { return fmt.Sprint(*p) }

func (p *platforms) Set(v string) error {
	osArch, bin, ok := strings.Cut(v, "=")
	goos, arch, ok2 := strings.Cut(osArch, "/")
	if !ok || !ok2 || goos == "" || arch == "" || bin == "" {
		return fmt.Errorf("%q: want OS/ARCH=BINARY, as linux/amd64=out/release/linux_amd64/restoregraph", v)
	}
	*p = append(*p, image.Platform{OS: goos, Architecture: arch, Binary: bin})
	return nil
}

// veleros are Velero's commands, by OS/ARCH.
type veleros map[string]string

func (v veleros) String() string { return fmt.Sprint(map[string]string(v)) }

func (v veleros) Set(s string) error {
	osArch, bin, ok := strings.Cut(s, "=")
	if !ok || !strings.Contains(osArch, "/") || bin == "" {
		return fmt.Errorf("%q: want OS/ARCH=VELERO, as linux/amd64=out/release/linux_amd64/velero", s)
	}
	v[osArch] = bin
	return nil
}

func main() {
	var opts image.Options
	var ps platforms
	out := flag.String("out", "", "the directory the OCI image layout is written to (emptied first)")
	flag.StringVar(&opts.Version, "version", "", "the image's version")
	flag.StringVar(&opts.CACertificates, "ca", "/etc/ssl/certs/ca-certificates.crt", "the PEM bundle of CA certificates the image trusts")
	flag.StringVar(&opts.Source, "source", "https://github.com/restoregraph/restoregraph", "the image's source label")
	flag.Var(&ps, "platform", "OS/ARCH=BINARY: a platform and the static restoregraph built for it (repeated)")
	vs := veleros{}
	flag.Var(vs, "velero", "OS/ARCH=VELERO: Velero's velero command built static for a platform, put at /velero (repeated)")
	flag.Parse()
	for i, p := range ps {
		key := p.OS + "/" + p.Architecture
		ps[i].Velero = vs[key]
		delete(vs, key)
	}
	for osArch := range vs {
		fmt.Fprintf(os.Stderr, "image: -velero %s: no -platform %s\n", osArch, osArch)
		os.Exit(2)
	}
	opts.Platforms = ps
	if *out == "" || opts.Version == "" {
		fmt.Fprintln(os.Stderr, "image: -out and -version are needed")
		os.Exit(2)
	}
	if err := os.RemoveAll(*out); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	idx, err := image.Write(*out, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	digest, err := idx.Digest()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: restoregraph %s, %d platforms, index %s\n", *out, opts.Version, len(ps), digest)
}

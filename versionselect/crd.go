package versionselect

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// CRDRule names a rule of the CRD versioning design that a CRD breaks.
type CRDRule string

const (
	CRDVersionNames  CRDRule = "VersionNames"         // names unique and valid DNS-1035 labels
	CRDOneStorage    CRDRule = "OneStorageVersion"    // exactly one storage version
	CRDStoredListed  CRDRule = "StoredVersionsListed" // every status.storedVersions entry in spec.versions
	CRDServedVersion CRDRule = "ServedVersion"        // at least one served version
)

// CRDVersionError says which rule a CRD's versions break.
type CRDVersionError struct {
	CRD    string // the CRD's name, <plural>.<group>
	Rule   CRDRule
	Detail string
}

func (e *CRDVersionError) Error() string {
	return fmt.Sprintf("CRD %s breaks %s: %s", e.CRD, e.Rule, e.Detail)
}

// ValidateCRDVersions checks crd's versions against the CRD versioning rules. It returns
// nil, or every violation joined (errors.Join), each a *CRDVersionError.
func ValidateCRDVersions(crd *apiextv1.CustomResourceDefinition) error {
	var errs []error
	fail := func(rule CRDRule, format string, args ...any) {
		errs = append(errs, &CRDVersionError{CRD: crd.Name, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	names := map[string]bool{}
	storage, served := 0, 0
	for _, v := range crd.Spec.Versions {
		if msgs := validation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			fail(CRDVersionNames, "version %q: %s", v.Name, strings.Join(msgs, "; "))
		}
		if names[v.Name] {
			fail(CRDVersionNames, "version %q is listed twice", v.Name)
		}
		names[v.Name] = true
		if v.Storage {
			storage++
		}
		if v.Served {
			served++
		}
	}
	if storage != 1 {
		fail(CRDOneStorage, "%d versions are marked storage", storage)
	}
	for _, sv := range crd.Status.StoredVersions {
		if !names[sv] {
			fail(CRDStoredListed, "stored version %q is no longer in spec.versions; objects stored at it could not be read", sv)
		}
	}
	if served == 0 {
		fail(CRDServedVersion, "no version is served")
	}
	return errors.Join(errs...)
}

// ServedVersions returns crd's served versions, highest Kubernetes priority first. Its
// first element is the version an API server prefers in discovery.
func ServedVersions(crd *apiextv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return sorted(out)
}

// PreferredVersion returns the version an API server prefers for crd: its
// highest-priority served version. ok is false when no version is served.
func PreferredVersion(crd *apiextv1.CustomResourceDefinition) (version string, ok bool) {
	served := ServedVersions(crd)
	if len(served) == 0 {
		return "", false
	}
	return served[0], true
}

// WebhookStorage returns the version crd stores objects at when a conversion webhook
// converts between its versions, "" when none does.
func WebhookStorage(crd *apiextv1.CustomResourceDefinition) string {
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextv1.WebhookConverter {
		return ""
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// CRDGroupResource returns the group-resource that crd defines.
func CRDGroupResource(crd *apiextv1.CustomResourceDefinition) schema.GroupResource {
	return schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
}

// DecodeCRD decodes a CRD as it was backed up, at apiextensions.k8s.io/v1 or at the
// v1beta1 version that clusters before Kubernetes 1.22 served. Only what version
// selection needs is carried over from v1beta1: group, names, versions (or the single
// spec.version), served, storage and status.storedVersions.
func DecodeCRD(data []byte) (*apiextv1.CustomResourceDefinition, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	crd := &apiextv1.CustomResourceDefinition{}
	switch head.APIVersion {
	case "apiextensions.k8s.io/v1":
		if err := json.Unmarshal(data, crd); err != nil {
			return nil, err
		}
	case "apiextensions.k8s.io/v1beta1":
		var old struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Group    string                                 `json:"group"`
				Names    apiextv1.CustomResourceDefinitionNames `json:"names"`
				Version  string                                 `json:"version"`
				Versions []struct {
					Name    string `json:"name"`
					Served  bool   `json:"served"`
					Storage bool   `json:"storage"`
				} `json:"versions"`
			} `json:"spec"`
			Status struct {
				StoredVersions []string `json:"storedVersions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return nil, err
		}
		crd.Name = old.Metadata.Name
		crd.Spec.Group, crd.Spec.Names = old.Spec.Group, old.Spec.Names
		for _, v := range old.Spec.Versions {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served, Storage: v.Storage})
		}
		if len(crd.Spec.Versions) == 0 && old.Spec.Version != "" {
			crd.Spec.Versions = []apiextv1.CustomResourceDefinitionVersion{{Name: old.Spec.Version, Served: true, Storage: true}}
		}
		crd.Status.StoredVersions = old.Status.StoredVersions
	default:
		return nil, fmt.Errorf("apiVersion %q is not a CustomResourceDefinition version", head.APIVersion)
	}
	if crd.Spec.Group == "" || crd.Spec.Names.Plural == "" {
		return nil, fmt.Errorf("CRD %q has no spec.group or spec.names.plural", crd.Name)
	}
	return crd, nil
}

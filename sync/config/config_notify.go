package config

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// CommitStatusProviders are the Git hosts commit statuses can go to.
var commitStatusProviders = []string{"github", "gitlab", "gitea", "bitbucket"}

// parseNotifications reads a list of destinations. A URL usually holds a
// token, so it may come from the environment or a file instead of the
// config itself.
func parseNotifications(key, prefix string, fns []fileNotification, secret func(what, env, file string) (string, error)) ([]Notification, []error) {
	var out []Notification
	var errs []error
	names := map[string]bool{}
	for i, fn := range fns {
		where := fmt.Sprintf("%s[%d]", key, i)
		n := Notification{Name: fn.Name, Events: fn.Events}
		if n.Name == "" {
			n.Name = fmt.Sprintf("%s-%d", prefix, i+1)
		}
		if names[n.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is used twice; give each destination its own name", where, n.Name))
		}
		names[n.Name] = true
		set := 0
		for _, v := range []string{fn.URL, fn.URLEnv, fn.URLFile} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			errs = append(errs, fmt.Errorf("%s: set exactly one of url, urlEnv and urlFile (urlEnv or urlFile keep the token out of this file)", where))
			continue
		}
		n.URL = fn.URL
		if n.URL == "" {
			u, err := secret("url", fn.URLEnv, fn.URLFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			n.URL = u
		}
		out = append(out, n)
	}
	return out, errs
}

// parseAppNotify reads an app's own destinations and commit status.
func parseAppNotify(fa fileAppConfig, app *AppConfig, secret func(what, env, file string) (string, error)) []error {
	var errs []error
	app.Notifications, errs = parseNotifications("notifications", fa.Name, fa.Notifications, secret)
	cs, err := parseCommitStatus(fa.CommitStatus, secret)
	if err != nil {
		errs = append(errs, err)
	}
	app.CommitStatus = cs
	return errs
}

func parseNotify(fn *fileNotify) (NotifySettings, []error) {
	var s NotifySettings
	if fn == nil {
		return s, nil
	}
	var errs []error
	for _, d := range []struct {
		key string
		raw string
		to  *time.Duration
	}{{"notify.sourceUnreachableAfter", fn.SourceUnreachableAfter, &s.SourceUnreachableAfter}, {"notify.repairBatch", fn.RepairBatch, &s.RepairBatch}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil || v <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive duration (like 90s or 5m)", d.key, d.raw))
			continue
		}
		*d.to = v
	}
	return s, errs
}

func parseCommitStatus(fc *fileCommitStatus, secret func(what, env, file string) (string, error)) (*CommitStatus, error) {
	if fc == nil {
		return nil, nil
	}
	if !slices.Contains(commitStatusProviders, fc.Provider) {
		return nil, fmt.Errorf("commitStatus.provider: %q is not supported: use one of %v", fc.Provider, commitStatusProviders)
	}
	tok, err := secret("token", fc.TokenEnv, fc.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("commitStatus: %w", err)
	}
	if tok == "" {
		return nil, errors.New("commitStatus: set tokenEnv or tokenFile: the Git host needs a token that may write commit statuses")
	}
	return &CommitStatus{Provider: fc.Provider, BaseURL: fc.BaseURL, Repo: fc.Repo, Token: tok}, nil
}

package customerdata

import (
	"testing"

	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// The masked forms, as docs/clients.md documents them.
func TestMaskedForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		mask           func(string) string
	}{
		{"name of two words", "Rahim Uddin", "R. U.", maskName},
		{"name of one word", "Rahim", "R.", maskName},
		{"name in lower case, spaced", "  md.  rahim   uddin ", "M. R. U.", maskName},
		{"name of many words keeps four initials", "A B C D E F", "A. B. C. D.", maskName},
		{"name in Bengali script", "রহিম উদ্দিন", "র. উ.", maskName},
		{"empty name", "", "", maskName},
		{"email", "rahim.uddin7@example.com", "r***@example.com", maskEmail},
		{"email of a one-letter local part", "r@mail.example.net", "r***@mail.example.net", maskEmail},
		{"email without a local part", "@example.com", "***", maskEmail},
		{"email without a domain", "rahim@", "***", maskEmail},
		{"not an email", "rahim", "***", maskEmail},
		{"email with a multibyte first letter", "é.dupont@example.fr", "é***@example.fr", maskEmail},
		{"phone +880 (14)", "+8801712340001", "+8801*****0001", maskPhone},
		{"phone local (11)", "01712340001", "01*****0001", maskPhone},
		{"phone of 9", "123456789", "*****6789", maskPhone},
		{"phone of 8", "12345678", "****5678", maskPhone},
		{"phone of 6", "123456", "****56", maskPhone},
		{"phone of 3", "123", "***", maskPhone},
		{"empty phone", "", "", maskPhone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.mask(tc.in); got != tc.want {
				t.Errorf("%q masks to %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func strp(s string) *string { return &s }

// Each level's customer block, field by field.
func TestMaskCustomer(t *testing.T) {
	t.Parallel()
	in := restclient.Customer{Name: strp("Rahim Uddin"), Email: strp("rahim@example.com"), Phone: strp("+8801712340001"),
		Address: strp("House 1, Road 2, Sylhet"), City: strp("Sylhet")}
	str := func(s *string) string {
		if s == nil {
			return "null"
		}
		return *s
	}
	for _, tc := range []struct {
		level                             sessiontoken.CustomerData
		name, email, phone, address, city string
	}{
		{sessiontoken.CustomerDataFull, "Rahim Uddin", "rahim@example.com", "+8801712340001", "House 1, Road 2, Sylhet", "Sylhet"},
		{sessiontoken.CustomerDataMasked, "R. U.", "r***@example.com", "+8801*****0001", "null", "Sylhet"},
		{sessiontoken.CustomerDataNone, "null", "null", "null", "null", "null"},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			c := maskCustomer(in, tc.level)
			got := [5]string{str(c.Name), str(c.Email), str(c.Phone), str(c.Address), str(c.City)}
			want := [5]string{tc.name, tc.email, tc.phone, tc.address, tc.city}
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	if c := maskCustomer(restclient.Customer{}, sessiontoken.CustomerDataMasked); c != (restclient.Customer{}) {
		t.Errorf("a customer without data masks to %+v", c)
	}
}

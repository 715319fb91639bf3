"""The setup page's mapping form: the SCIM attribute of each name the application declared in its attribute
map, and rows of group → role for its role map. The form only shapes the input; the rules are those of
every surface (setuplinks.services.mapping_problems, on directories.mapping), checked when it is saved."""

from __future__ import annotations

from typing import Any

from django import forms

from directories.mapping import GROUP_KEY_MAX, PATH_MAX, ROLE_MAP_MAX

# Empty rows offered below the role map's own, to add groups without JavaScript.
EXTRA_ROLE_ROWS = 3
# SCIM attribute paths offered as suggestions (any path is accepted): the core User attributes and the
# enterprise extension that Okta, Entra ID, OneLogin and JumpCloud send (RFC 7643 §4.1, §4.3).
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
SUGGESTED_PATHS = (
    "userName",
    "externalId",
    "displayName",
    "nickName",
    "title",
    "userType",
    "preferredLanguage",
    "locale",
    "timezone",
    "name.givenName",
    "name.familyName",
    "name.formatted",
    'emails[type eq "work"].value',
    'phoneNumbers[type eq "work"].value',
    'phoneNumbers[type eq "mobile"].value',
    'addresses[type eq "work"].locality',
    'addresses[type eq "work"].country',
    f"{ENTERPRISE}:employeeNumber",
    f"{ENTERPRISE}:department",
    f"{ENTERPRISE}:division",
    f"{ENTERPRISE}:organization",
    f"{ENTERPRISE}:costCenter",
    f"{ENTERPRISE}:manager.value",
)


def _attribute_field(name: str) -> str:
    return f"attr-{name}"


class MappingForm(forms.Form):
    """Fields `attr-<name>` for each declared name, and rows `group-<i>` / `role-<i>`; `rows` says how
    many rows the page had (the role map's, plus EXTRA_ROLE_ROWS empty ones)."""

    rows = forms.IntegerField(
        required=False, min_value=0, max_value=ROLE_MAP_MAX + EXTRA_ROLE_ROWS, widget=forms.HiddenInput
    )

    def __init__(
        self,
        data: Any = None,
        *,
        attribute_map: dict[str, Any],
        role_map: dict[str, Any],
        roles: list[str],
    ) -> None:
        rows = len(role_map) + EXTRA_ROLE_ROWS
        if data is not None:
            posted = str(data.get("rows", ""))
            if posted.isascii() and posted.isdigit() and len(posted) < 6:
                rows = min(int(posted), ROLE_MAP_MAX + EXTRA_ROLE_ROWS)
        super().__init__(data, initial={"rows": rows})
        self.names = sorted(attribute_map)
        self.roles = roles
        for name in self.names:
            current = attribute_map[name]
            self.fields[_attribute_field(name)] = forms.CharField(
                required=False,
                max_length=PATH_MAX,
                label=name,
                initial=current if isinstance(current, str) else "",
                widget=forms.TextInput(attrs={"list": "scim-paths", "autocomplete": "off", "spellcheck": "false"}),
            )
        choices = [("", "Choose a role")] + [(role, role) for role in roles]
        initial_rows = list(role_map.items())
        self.row_count = rows
        for row in range(rows):
            group, role = initial_rows[row] if row < len(initial_rows) else ("", "")
            self.fields[f"group-{row}"] = forms.CharField(
                required=False,
                max_length=GROUP_KEY_MAX,
                label=f"Group {row + 1}",
                initial=group,
                widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "Group name or id"}),
            )
            self.fields[f"role-{row}"] = forms.ChoiceField(
                required=False, choices=choices, label=f"Role of group {row + 1}", initial=role
            )

    def attribute_fields(self) -> list[forms.BoundField]:
        return [self[_attribute_field(name)] for name in self.names]

    def role_rows_fields(self) -> list[tuple[forms.BoundField, forms.BoundField]]:
        return [(self[f"group-{row}"], self[f"role-{row}"]) for row in range(self.row_count)]

    def attribute_map_posted(self) -> dict[str, str]:
        return {name: self.cleaned_data[_attribute_field(name)] for name in self.names}

    def role_rows_posted(self) -> list[tuple[str, str]]:
        return [(self.cleaned_data[f"group-{row}"], self.cleaned_data[f"role-{row}"]) for row in range(self.row_count)]

    def errors_from(self, errors: dict[tuple[str, Any], str]) -> None:
        """Show the service's messages next to their fields."""
        for (kind, key), message in errors.items():
            field = _attribute_field(key) if kind == "attribute" else f"{kind}-{key}"
            self.add_error(field if field in self.fields else None, message)

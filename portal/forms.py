"""Portal forms. They only shape browser input into the dict the services take: the services do the
validation, so the portal shows exactly the messages the REST and admin APIs give."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from adminauth.throttle import email_key
from directories.models import DirectoryType


class SignInForm(forms.Form):
    email = forms.CharField(
        max_length=320, widget=forms.EmailInput(attrs={"autocomplete": "username", "autofocus": True})
    )
    password = forms.CharField(
        max_length=1024, strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )

    def clean_email(self) -> str:
        return email_key(self.cleaned_data["email"])


def _text(max_length: int, **attrs: Any) -> forms.CharField:
    """A text field Django never rejects as empty: the empty value reaches the service, which answers
    with the API's own message. `required=True` in attrs only adds the HTML attribute (a browser hint)."""
    return forms.CharField(required=False, max_length=max_length, widget=forms.TextInput(attrs=attrs))


class DirectoryCreateForm(forms.Form):
    name = _text(200, placeholder="Built from tenant and product when empty")
    tenant = _text(200, required=True, placeholder="acme")
    product = _text(200, required=True, placeholder="crm")
    type = forms.ChoiceField(choices=DirectoryType.choices, initial=DirectoryType.GENERIC, label="Identity provider")
    webhook_url = forms.CharField(
        required=False,
        max_length=2048,
        label="Webhook URL",
        widget=forms.URLInput(attrs={"placeholder": "https://app.example.com/hooks/roster"}),
    )
    webhook_secret = _text(512, autocomplete="off", placeholder="Generated when empty")

    def service_data(self) -> dict[str, Any]:
        data = {k: v for k, v in self.cleaned_data.items() if v not in ("", None)}
        data.setdefault("tenant", "")
        data.setdefault("product", "")
        return data


class DirectoryEditForm(forms.Form):
    name = _text(200, required=True)
    webhook_url = forms.CharField(
        required=False,
        max_length=2048,
        label="Webhook URL",
        help_text="Leave empty to send no webhooks.",
        widget=forms.URLInput(attrs={"placeholder": "https://app.example.com/hooks/roster"}),
    )
    webhook_secret = _text(512, autocomplete="off", placeholder="Unchanged when empty")
    log_webhook_events = forms.BooleanField(
        required=False,
        label="Log webhook deliveries",
        help_text="Keep every delivery attempt (status, latency, response excerpt, payload) for the deliveries page.",
    )
    log_scim_requests = forms.BooleanField(
        required=False,
        label="Log successful SCIM requests",
        help_text="Failed SCIM requests are always kept; with this on, every request is, with its bodies.",
    )
    # The deprovision guard (contract §4.2); the service checks the numbers and names the one it refuses.
    guard_enabled = forms.BooleanField(
        required=False,
        label="Hold mass deprovisions",
        help_text="Deactivations and deletions beyond both limits below, within the window, wait for a person.",
    )
    guard_max_users = forms.IntegerField(required=False, label="More than this many users", help_text="At least 1.")
    guard_max_percent = forms.IntegerField(
        required=False,
        label="And more than this percentage of the active users",
        help_text="1 to 100; 100 counts deprovisions but never holds one.",
    )
    guard_window_minutes = forms.IntegerField(
        required=False, label="Within this many minutes", help_text="1 to 10080 (7 days)."
    )

    # The directory's SCIM rate limit (contract §4.5): empty for the deployment's SCIM_RATE_LIMIT.
    scim_rate_limit = forms.IntegerField(
        required=False,
        label="SCIM requests per minute",
        help_text="1500 to 600000, 0 for no limit; empty for this deployment's default.",
    )

    # Each setting of the guard, and the field that shows it.
    GUARD_FIELDS = {
        "enabled": "guard_enabled",
        "max_users": "guard_max_users",
        "max_percent": "guard_max_percent",
        "window_minutes": "guard_window_minutes",
    }

    @classmethod
    def guard_initial(cls, setting: dict[str, Any]) -> dict[str, Any]:
        return {field: setting[key] for key, field in cls.GUARD_FIELDS.items()}

    def service_field(self, name: str | None) -> str | None:
        """The form field that shows the service's error about `name` (`deprovision_guard.<key>` or a field)."""
        if name and name.startswith("deprovision_guard."):
            return self.GUARD_FIELDS.get(name.partition(".")[2])
        return name

    def service_data(self) -> dict[str, Any]:
        guard = {key: self.cleaned_data[field] for key, field in self.GUARD_FIELDS.items()}
        # A post without the guard's fields (not this page's form) leaves the guard as it is.
        shown = any(field in self.data for field in self.GUARD_FIELDS.values())
        data: dict[str, Any] = {
            "name": self.cleaned_data["name"],
            "webhook_url": self.cleaned_data["webhook_url"],
            "log_webhook_events": self.cleaned_data["log_webhook_events"],
            "log_scim_requests": self.cleaned_data["log_scim_requests"],
        }
        if "scim_rate_limit" in self.data:
            data["scim_rate_limit"] = self.cleaned_data["scim_rate_limit"]  # None: the deployment's default
        if shown:
            # An empty number keeps the current value.
            data["deprovision_guard"] = {key: value for key, value in guard.items() if value is not None}
        if self.cleaned_data["webhook_secret"]:
            data["webhook_secret"] = self.cleaned_data["webhook_secret"]
        return data


class _JsonObjectField(forms.CharField):
    """A textarea holding a JSON object; empty means {}."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, max_length=200_000, widget=forms.Textarea(attrs={"rows": 8}), **kwargs)

    def clean(self, value: Any) -> dict[str, Any]:
        text = (super().clean(value) or "").strip()
        if not text:
            return {}
        try:
            parsed = json.loads(text)
        except ValueError:
            raise forms.ValidationError("This is not valid JSON.") from None
        if not isinstance(parsed, dict):
            raise forms.ValidationError("This must be a JSON object, {…}.")
        return parsed


class DirectoryMappingForm(forms.Form):
    attribute_map = _JsonObjectField(
        label="Attribute map",
        help_text='{"name": "SCIM attribute path"}, e.g. {"department": '
        '"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department"}: each user\'s custom_attributes.',
    )
    role_map = _JsonObjectField(
        label="Role map",
        help_text='{"group displayName or id": "role"}, e.g. {"Engineering": "developer"}: each user\'s roles.',
    )
    preview_user = forms.CharField(
        required=False,
        max_length=512,
        label="Preview for user",
        help_text="A user's id or userName: shows what the maps above give them, without saving.",
    )


class DeleteConfirmForm(forms.Form):
    """Deleting takes every user, group and log row with it, so the admin types the name to confirm."""

    confirm_name = forms.CharField(max_length=200, label="Type the directory's name to confirm")

    def __init__(self, *args: Any, expected_name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.expected_name = expected_name

    def clean_confirm_name(self) -> str:
        value = self.cleaned_data["confirm_name"].strip()
        if value != self.expected_name.strip():
            raise forms.ValidationError("That is not this directory's name; nothing was deleted.")
        return value


class ScimSecretRotateForm(forms.Form):
    """How long the secret being replaced keeps working (contract §4.1, `grace_seconds`)."""

    GRACE_CHOICES = [
        ("0", "Now: the current secret stops working at once"),
        ("3600", "Keep the current secret working for 1 hour"),
        ("86400", "Keep the current secret working for 1 day"),
        ("604800", "Keep the current secret working for 7 days"),
    ]

    # Not required: a confirmation posted without a choice rotates "now", as the page did before it had one.
    grace_seconds = forms.TypedChoiceField(
        choices=GRACE_CHOICES,
        coerce=int,
        required=False,
        empty_value=0,
        initial="0",
        widget=forms.RadioSelect,
        label="When should the current secret stop working?",
    )


class SetupLinkInviteForm(forms.Form):
    """ "Invite IT admin": a setup link to the directory (contract §3.1). The service checks each value
    (setuplinks.services), so this form only offers the choices."""

    EXPIRY_CHOICES = [
        ("3600", "1 hour"),
        ("86400", "1 day"),
        ("259200", "3 days"),
        ("604800", "7 days"),
        ("2592000", "30 days"),
    ]
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="259200", label="Link works for")
    allow_mapping = forms.BooleanField(
        required=False,
        label="Let them edit the attribute and role maps",
        help_text="They choose the SCIM attribute of each name already in the attribute map, and the groups of the "
        "roles already in the role map.",
    )
    return_url = forms.CharField(
        required=False,
        max_length=2048,
        label="Return URL",
        help_text='Optional: where the page\'s "Done" link goes, an https address of your application.',
        widget=forms.URLInput(attrs={"placeholder": "https://app.example.com/settings/sso"}),
    )

    def service_data(self) -> dict[str, Any]:
        return {
            "expires_in": int(self.cleaned_data["expires_in"]),
            "allow_mapping": self.cleaned_data["allow_mapping"],
            "return_url": self.cleaned_data["return_url"].strip(),
        }


class WebhookEndpointForm(forms.Form):
    """A webhook endpoint (contract §5.2), created or edited. Empty filters mean "any"; the service checks
    every value (webhooks.services.endpoints) and its messages are shown next to the fields."""

    url = _text(2048, required=True, placeholder="https://app.example.com/hooks/roster")
    description = _text(500)
    events = forms.CharField(
        required=False,
        max_length=2000,
        label="Events",
        help_text="Event names separated by spaces or commas (user.created, group.user_added, dsync.deleted…), "
        "or * for every event.",
        widget=forms.TextInput(attrs={"placeholder": "*"}),
    )
    tenant = _text(200)
    product = _text(200)
    directory_id = _text(36)
    format = forms.ChoiceField(
        choices=[("roster", "roster: Roster-Signature header"), ("standard", "standard: Standard Webhooks v1")],
        initial="roster",
    )
    enabled = forms.BooleanField(required=False, initial=True)

    def service_data(self) -> dict[str, Any]:
        data = self.cleaned_data
        events = [name for name in data["events"].replace(",", " ").split() if name] or ["*"]
        return {
            "url": data["url"].strip(),
            "description": data["description"],
            "events": events,
            "tenant": data["tenant"].strip() or None,
            "product": data["product"].strip() or None,
            "directory_id": data["directory_id"].strip() or None,
            "format": data["format"],
            "enabled": data["enabled"],
        }


class EndpointRotateForm(forms.Form):
    grace_seconds = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=86400,
        initial=0,
        label="Grace (seconds)",
        help_text="standard endpoints: both signatures are sent for this long. roster endpoints switch at once.",
    )

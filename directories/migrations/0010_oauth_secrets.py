"""Several OAuth client secrets per directory, each with an expiry (contract §4.3): the single secret's
digest moves into the list, as its `legacy` entry (version 1 access tokens are checked against it),
expiring 365 days after the migration."""

import uuid
from datetime import UTC, datetime, timedelta

from django.db import migrations, models


def _iso(moment):
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def secrets_listed(apps, schema_editor):
    Directory = apps.get_model("directories", "Directory")
    expires = _iso(datetime.now(UTC) + timedelta(days=365))
    for directory in Directory.objects.exclude(scim_oauth_secret_hash=""):
        created = directory.scim_oauth_secret_created_at or datetime.now(UTC)
        directory.scim_oauth_secrets = [
            {
                "id": str(uuid.uuid4()),
                "hash": directory.scim_oauth_secret_hash,
                "hint": "",
                "created_at": _iso(created),
                "expires_at": expires,
                "last_used_at": None,
                "legacy": True,
            }
        ]
        directory.save(update_fields=["scim_oauth_secrets"])


def secret_single(apps, schema_editor):
    Directory = apps.get_model("directories", "Directory")
    for directory in Directory.objects.exclude(scim_oauth_secrets=[]):
        newest = directory.scim_oauth_secrets[0]
        directory.scim_oauth_secret_hash = newest["hash"]
        directory.scim_oauth_secret_created_at = datetime.fromisoformat(newest["created_at"])
        directory.save(update_fields=["scim_oauth_secret_hash", "scim_oauth_secret_created_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("directories", "0009_rate_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="directory",
            name="scim_oauth_secrets",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(secrets_listed, secret_single),
        migrations.RemoveField(model_name="directory", name="scim_oauth_secret_created_at"),
        migrations.RemoveField(model_name="directory", name="scim_oauth_secret_hash"),
    ]

"""Fill the comparison documents (filter_doc) of the users and groups stored before they existed.

The builder is SCIM's (scim.protocol.documents.filterdoc), hence a migration of this app; it runs after
the directories migration that adds the columns.
"""

from django.db import migrations

from scim.protocol.documents.filterdoc import filter_document


def backfill(apps, schema_editor):
    for model, resource_type in (("DirectoryUser", "users"), ("DirectoryGroup", "groups")):
        rows = apps.get_model("directories", model)
        batch = []
        for row in rows.objects.only("id", "raw").iterator(chunk_size=2000):
            row.filter_doc = filter_document(row.raw if isinstance(row.raw, dict) else {}, resource_type=resource_type)
            batch.append(row)
            if len(batch) >= 2000:
                rows.objects.bulk_update(batch, ["filter_doc"])
                batch = []
        rows.objects.bulk_update(batch, ["filter_doc"])


class Migration(migrations.Migration):
    dependencies = [
        ("directories", "0004_filter_documents_and_maps"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]

"""Comparison documents for SCIM filters and sortBy, the REST email filter's key, and the directory's
attribute and role maps.

On PostgreSQL two indexes serve the filters and sorts that must stay fast in a large directory: a GIN
index (jsonb_path_ops) on the users' comparison documents, which answers an `eq` on any attribute by
containment (`@>`), and a B-tree on the folded family name in code-point order, which serves
`sortBy=name.familyName` pages. The expressions must stay exactly those scim/storage/query/documents.py
writes (PostgresDocuments).
The documents themselves are filled by scim's migration 0001 (the builder lives in scim.protocol).
"""

from django.db import migrations, models

from core.comparison import comparison_key

POSTGRES_INDEXES = """
CREATE INDEX user_filter_doc ON directories_directoryuser USING gin (filter_doc jsonb_path_ops);
CREATE INDEX user_sort_family_name ON directories_directoryuser
    (directory_id, ((filter_doc #>> '{name,0,familyname,0}') COLLATE "C"), id);
"""
POSTGRES_INDEXES_DROP = "DROP INDEX IF EXISTS user_filter_doc; DROP INDEX IF EXISTS user_sort_family_name;"


def email_keys(apps, schema_editor):
    users = apps.get_model("directories", "DirectoryUser")
    batch = []
    for user in users.objects.exclude(email="").only("id", "email").iterator(chunk_size=2000):
        user.email_key = comparison_key(user.email)
        batch.append(user)
        if len(batch) >= 2000:
            users.objects.bulk_update(batch, ["email_key"])
            batch = []
    users.objects.bulk_update(batch, ["email_key"])


def indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_INDEXES, params=None)


def indexes_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_INDEXES_DROP, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('directories', '0003_user_tally'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='directoryuser',
            name='user_directory_email',
        ),
        migrations.RemoveField(
            model_name='directoryuser',
            name='emails_index',
        ),
        migrations.AddField(
            model_name='directory',
            name='attribute_map',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='directory',
            name='role_map',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='directorygroup',
            name='filter_doc',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='directoryuser',
            name='email_key',
            field=models.CharField(blank=True, default='', max_length=512),
        ),
        migrations.AddField(
            model_name='directoryuser',
            name='filter_doc',
            field=models.JSONField(default=dict),
        ),
        migrations.AddIndex(
            model_name='directoryuser',
            index=models.Index(fields=['directory', 'email_key'], name='user_directory_email_key'),
        ),
        migrations.RunPython(email_keys, migrations.RunPython.noop),
        migrations.RunPython(indexes, indexes_drop),
    ]

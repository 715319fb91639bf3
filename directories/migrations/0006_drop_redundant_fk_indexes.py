"""Drops the single-column indexes of foreign keys that a composite index or unique constraint starting with
the same column already serves: every write paid for an index no query needed.

Only the indexes go. Django's own AlterField would also drop and re-add each foreign-key constraint, which
checks every row of the table again under a lock; so the state changes as AlterField says while the
database only runs DROP INDEX (instant). The index names are the ones Django gave them, the same on
PostgreSQL and SQLite."""

import django.db.models.deletion
from django.db import migrations, models

# (model, field, table, column, index name, related model, related_name)
DROPPED = [
    ("directorygroup", "directory", "directories_directorygroup", "directory_id",
     "directories_directorygroup_directory_id_a8a40a7c", "directories.directory", "groups"),
    ("directoryuser", "directory", "directories_directoryuser", "directory_id",
     "directories_directoryuser_directory_id_b23dfc8a", "directories.directory", "users"),
    ("groupmembership", "group", "directories_groupmembership", "group_id",
     "directories_groupmembership_group_id_fcd9e47e", "directories.directorygroup", "memberships"),
    ("groupmembership", "user", "directories_groupmembership", "user_id",
     "directories_groupmembership_user_id_232e546e", "directories.directoryuser", "memberships"),
    ("scimlogentry", "directory", "directories_scimlogentry", "directory_id",
     "directories_scimlogentry_directory_id_fd111e34", "directories.directory", "scim_log"),
]


class Migration(migrations.Migration):

    dependencies = [
        ('directories', '0005_scim_activity_and_secret_rotation'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model,
                    name=field,
                    field=models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name=related_name, to=to
                    ),
                )
                for model, field, _table, _column, _index, to, related_name in DROPPED
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{index}" ON "{table}" ("{column}")',
                )
                for _model, _field, table, column, index, _to, _related in DROPPED
            ],
        ),
    ]

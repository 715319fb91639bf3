"""UserTally and, on PostgreSQL, the triggers that keep it (see the model's docstring).

Statement-level triggers with transition tables: one upsert per directory per statement, whatever
the number of rows (a bulk seed of 100,000 users costs one upsert per batch). Rows are upserted in
directory order so that two statements touching several directories cannot deadlock on the tally.
Creating the triggers locks the users table against writes until this migration commits, so the
backfill below counts exactly the rows the triggers have not seen.
"""

import django.db.models.deletion
from django.db import migrations, models

INSTALL = """
ALTER TABLE directories_usertally
    ADD CONSTRAINT directories_usertally_directory_fk FOREIGN KEY (directory_id)
    REFERENCES directories_directory (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;

CREATE FUNCTION directories_user_tally_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted)
    SELECT n.directory_id, pg_backend_pid() % 16, count(*), 0
    FROM directories_user_tally_new n GROUP BY n.directory_id ORDER BY n.directory_id
    ON CONFLICT (directory_id, shard) DO UPDATE SET created = t.created + EXCLUDED.created;
    RETURN NULL;
END $$;

CREATE FUNCTION directories_user_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted)
    SELECT o.directory_id, pg_backend_pid() % 16, 0, count(*)
    FROM directories_user_tally_old o GROUP BY o.directory_id ORDER BY o.directory_id
    ON CONFLICT (directory_id, shard) DO UPDATE SET deleted = t.deleted + EXCLUDED.deleted;
    RETURN NULL;
END $$;

CREATE TRIGGER directories_user_tally_created AFTER INSERT ON directories_directoryuser
    REFERENCING NEW TABLE AS directories_user_tally_new
    FOR EACH STATEMENT EXECUTE FUNCTION directories_user_tally_created();

CREATE TRIGGER directories_user_tally_deleted AFTER DELETE ON directories_directoryuser
    REFERENCING OLD TABLE AS directories_user_tally_old
    FOR EACH STATEMENT EXECUTE FUNCTION directories_user_tally_deleted();
"""

# The users that exist before the triggers do, as created by shard 0.
BACKFILL = """
INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted)
SELECT directory_id, 0, count(*), 0 FROM directories_directoryuser GROUP BY directory_id
ON CONFLICT (directory_id, shard) DO UPDATE SET created = t.created + EXCLUDED.created;
"""

UNINSTALL = """
DROP TRIGGER IF EXISTS directories_user_tally_created ON directories_directoryuser;
DROP TRIGGER IF EXISTS directories_user_tally_deleted ON directories_directoryuser;
DROP FUNCTION IF EXISTS directories_user_tally_created();
DROP FUNCTION IF EXISTS directories_user_tally_deleted();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL, params=None)
        schema_editor.execute(BACKFILL, params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNINSTALL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("directories", "0002_user_emails_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="UserTally",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "directory", "shard", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("shard", models.SmallIntegerField()),
                ("created", models.BigIntegerField(default=0)),
                ("deleted", models.BigIntegerField(default=0)),
                (
                    "directory",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="directories.directory",
                    ),
                ),
            ],
        ),
        migrations.RunPython(install, uninstall),
    ]

"""UserTally.active: the directory's active users, kept by the tally's triggers (see the model's docstring),
in place of the partial index `user_directory_active` that the deprovision guard counted them through.

The insert and delete triggers of migration 0003 now also add the active users of their transition table
(`count(*) FILTER (WHERE active)`, same statement, same upsert). An update that turns a user active or
inactive is counted by a row trigger on `UPDATE OF active` whose WHEN clause compares the old and new value,
so every other update (a rename, a PUT that resends `active` unchanged) runs no function at all. It is an
AFTER trigger, so like the others it runs at its statement's end.

The users table is locked against writes (SHARE ROW EXCLUSIVE, what CREATE TRIGGER takes) before
anything else, and stays locked until this migration commits: the backfill counts exactly the active
users that no trigger has counted. Users never move from one directory to another, so a changed
`directory_id` is not looked for.
"""

from django.db import migrations, models

# First of all (before the column is added, which locks the tally that every user insert's trigger writes):
# a writer already waiting on the tally while holding the users table would otherwise deadlock with this.
LOCK = "LOCK TABLE directories_directoryuser IN SHARE ROW EXCLUSIVE MODE"

INSTALL = """
CREATE OR REPLACE FUNCTION directories_user_tally_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted, active)
    SELECT n.directory_id, pg_backend_pid() % 16, count(*), 0, count(*) FILTER (WHERE n.active)
    FROM directories_user_tally_new n GROUP BY n.directory_id ORDER BY n.directory_id
    ON CONFLICT (directory_id, shard)
    DO UPDATE SET created = t.created + EXCLUDED.created, active = t.active + EXCLUDED.active;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION directories_user_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted, active)
    SELECT o.directory_id, pg_backend_pid() % 16, 0, count(*), -count(*) FILTER (WHERE o.active)
    FROM directories_user_tally_old o GROUP BY o.directory_id ORDER BY o.directory_id
    ON CONFLICT (directory_id, shard)
    DO UPDATE SET deleted = t.deleted + EXCLUDED.deleted, active = t.active + EXCLUDED.active;
    RETURN NULL;
END $$;

CREATE FUNCTION directories_user_tally_turned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted, active)
    VALUES (NEW.directory_id, pg_backend_pid() % 16, 0, 0, CASE WHEN NEW.active THEN 1 ELSE -1 END)
    ON CONFLICT (directory_id, shard) DO UPDATE SET active = t.active + EXCLUDED.active;
    RETURN NULL;
END $$;

CREATE TRIGGER directories_user_tally_turned AFTER UPDATE OF active ON directories_directoryuser
    FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active)
    EXECUTE FUNCTION directories_user_tally_turned();
"""

# The active users that exist before the triggers count them, as counted by shard 0.
BACKFILL = """
INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted, active)
SELECT directory_id, 0, 0, 0, count(*) FROM directories_directoryuser WHERE active GROUP BY directory_id
ON CONFLICT (directory_id, shard) DO UPDATE SET active = t.active + EXCLUDED.active;
"""

# Back to migration 0003's functions (the column goes with the reversed AddField).
UNINSTALL = """
DROP TRIGGER IF EXISTS directories_user_tally_turned ON directories_directoryuser;
DROP FUNCTION IF EXISTS directories_user_tally_turned();

CREATE OR REPLACE FUNCTION directories_user_tally_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted)
    SELECT n.directory_id, pg_backend_pid() % 16, count(*), 0
    FROM directories_user_tally_new n GROUP BY n.directory_id ORDER BY n.directory_id
    ON CONFLICT (directory_id, shard) DO UPDATE SET created = t.created + EXCLUDED.created;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION directories_user_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO directories_usertally AS t (directory_id, shard, created, deleted)
    SELECT o.directory_id, pg_backend_pid() % 16, 0, count(*)
    FROM directories_user_tally_old o GROUP BY o.directory_id ORDER BY o.directory_id
    ON CONFLICT (directory_id, shard) DO UPDATE SET deleted = t.deleted + EXCLUDED.deleted;
    RETURN NULL;
END $$;
"""


def _on_postgresql(*statements):
    """A RunPython function that runs `statements` on PostgreSQL (other databases have no triggers)."""

    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("directories", "0012_user_directory_active"),
    ]

    operations = [
        migrations.RunPython(_on_postgresql(LOCK), migrations.RunPython.noop),
        migrations.AddField(
            model_name="usertally",
            name="active",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(_on_postgresql(INSTALL, BACKFILL), _on_postgresql(UNINSTALL)),
        migrations.RemoveIndex(
            model_name="directoryuser",
            name="user_directory_active",
        ),
    ]

"""Failed attempts are counted per scope: admin credentials as before, and setup links' tokens (the
setuplinks app), each with its own budget. Existing rows are admin failures."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('adminauth', '0003_login_failure_email'),
    ]

    operations = [
        migrations.AddField(
            model_name='loginfailure',
            name='scope',
            field=models.CharField(default='admin', max_length=16),
        ),
    ]

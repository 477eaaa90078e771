"""batchq's tables (batchq.contrib.django.schema): created by `migrate`, kept up to date after a
batchq upgrade by `manage.py batchq init-db`."""

from typing import Any

from django.db import migrations


def create_schema(apps: Any, schema_editor: Any) -> None:
    from batchq.contrib.django.schema import init_db_for_alias

    init_db_for_alias(schema_editor.connection.alias)


class Migration(migrations.Migration):
    # batchq's init-db works on its own connection, in its own transactions (and MySQL's DDL
    # commits anyway): nothing of Django's may be open around it.
    atomic = False
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(create_schema, migrations.RunPython.noop, elidable=False)]

"""Celery tasks of history: a thin shell over history.services (contract §5.3)."""

from __future__ import annotations

from celery import shared_task

from history import services


@shared_task(name="history.fold", ignore_result=True, time_limit=600)
def history_fold() -> dict[str, int]:
    """Fold the changes feeds' new events into history, so that a read rarely has any left to fold."""
    result = services.history_fold_all()
    return {"directories": result.directories, "events": result.events}


@shared_task(name="history.prune", ignore_result=True, time_limit=600)
def history_prune() -> dict[str, int]:
    """Fold, then trim history to what the changes feed's retention still answers for."""
    result = services.history_fold_all(prune=True)
    return {"directories": result.directories, "events": result.events, "pruned": result.pruned}

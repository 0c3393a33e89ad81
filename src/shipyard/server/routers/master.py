from __future__ import annotations

from fastapi import APIRouter, Depends
from sqlalchemy import select

import shipyard
from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["master"])


@router.get("/master", operation_id="get_master", response_model=api.MasterInfo)
def get_master(m: MasterState = Depends(master)) -> api.MasterInfo:
    return api.MasterInfo(
        version=shipyard.__version__,
        started_at=m.started_at,
        database=m.db.dialect,
        home=str(m.settings.home),
        backend=", ".join(sorted({pool.type for pool in m.pools.values()})),
    )


@router.get("/slots", operation_id="list_slots", response_model=list[api.SlotInfo])
def list_slots(m: MasterState = Depends(master)) -> list[api.SlotInfo]:
    with m.db.read() as s:
        holders = s.execute(
            select(orm.Trial.id, orm.Trial.experiment_id, orm.Trial.slots).where(
                orm.Trial.state.in_((TrialState.STARTING, TrialState.RUNNING))
            )
        ).all()
    owner = {slot: (tid, eid) for tid, eid, slots in holders for slot in slots or []}
    pool_of = {slot.id: pool.name for pool in m.pools.values() for slot in pool.slots}
    return [
        api.SlotInfo(
            id=slot.id,
            kind=slot.kind,
            device=slot.device,
            pool=pool_of.get(slot.id),
            trial_id=owner.get(slot.id, (None, None))[0],
            experiment_id=owner.get(slot.id, (None, None))[1],
        )
        for slot in m.backend.capacity()
    ]

"""Single-node mode is an ownership strategy (``OneNode``), not a ``None`` to branch on: it owns
every project, at one epoch, for ever, and fences nothing; the node on LMDB runs with it, and
no module of the node asks whether it has an ownership at all."""

from __future__ import annotations

import ast
from pathlib import Path

import trio
from support.client import manual_shop
from support.waits import bound

import edge
from edge.actors.ownership import Leased, OneNode, Ownership
from edge.actors.project import ProjectActor

P = "prj_aaaaaaaaaaaaaaaa"


async def test_one_node_owns_every_project_at_any_epoch_and_fences_nothing() -> None:
    one: Ownership = OneNode()
    assert not one.shared
    assert await one.take(P) == await one.take(P, ask=True) == OneNode.EPOCH
    assert one.held(P) and one.held(P, OneNode.EPOCH) and one.held(P, 7)
    assert await one.claim(P)
    assert one.fence(P, OneNode.EPOCH) == []
    await one.give_back(P)
    await one.release_all()
    assert one.held(P) and await one.claim(P)  # nothing to give back: still its own
    with trio.fail_after(bound(5)):
        async with trio.open_nursery() as nursery:
            # starts at once and keeps nothing running: no heartbeat, nobody to hand over to
            await nursery.start(one.run, "http://127.0.0.1:1", print, lambda p, s: True, _let_go)


async def _let_go(project_id: str, grace_s: float) -> None:
    raise AssertionError("one node never lets a project go")


async def test_the_node_serves_its_projects_under_its_own_engines_strategy(node, admin) -> None:
    ownership = node.ctx.ownership
    shop = await manual_shop(admin)
    actor = node.ctx.registry._entries[shop.project_id].actor
    assert isinstance(actor, ProjectActor)
    if node.ctx.store.features.reads_give_way:  # make test-postgres: cluster mode, one node of N
        assert isinstance(ownership, Leased)
        assert ownership.held(shop.project_id, actor.epoch)
    else:
        assert isinstance(ownership, OneNode)
        assert actor.epoch == OneNode.EPOCH


def test_no_module_of_the_node_branches_on_ownership_being_none() -> None:
    found = []
    for path in Path(edge.__file__).parent.rglob("*.py"):
        for compare in ast.walk(ast.parse(path.read_text())):
            if not isinstance(compare, ast.Compare):
                continue
            sides = [compare.left, *compare.comparators]
            names = [_name(side) for side in sides]
            if any(n.endswith("ownership") for n in names) and any(
                isinstance(side, ast.Constant) and side.value is None for side in sides
            ):
                found.append(f"{path.name}:{compare.lineno}")
    assert found == []


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""

"""The world file (geodyn_ros.sim.world_file, config/world.yaml): the shipped worlds, and one line
``<file>: <key>: <problem>; <fix>`` for every bad key or value."""
from __future__ import annotations

import math
import textwrap

import pytest

from geodyn_ros.sim.model_error import Distribution
from geodyn_ros.sim.wind import KNOT
from geodyn_ros.sim.world_file import default_worlds_path, load_worlds, world_preset


def test_the_shipped_worlds():
    w = load_worlds()
    for name in ("exact", "cad", "thrust_stand", "sea", "model_error", "wind_light", "wind_moderate", "rotor_drag",
                 "push_base", "arm_mass_plus10", "thrust_minus5", "base_com_5mm", "lag_plus30", "mass_plus10",
                 "mass_minus10", "disturbed"):
        assert name in w, name
        assert w[name].where == str(default_worlds_path())
    assert w["exact"].exact and not any(v.exact for k, v in w.items() if k != "exact")
    cad = w["cad"].model_error.bodies[0]
    assert cad.links == "all" and cad.mass == Distribution.uniform(-0.05, 0.15)
    assert cad.com == (Distribution.uniform(0.005),) * 3 and cad.inertia == Distribution.uniform(0.10)
    ts = w["thrust_stand"].model_error.rotors
    assert ts == {"motor_constant": Distribution.uniform(0.05), "moment_constant": Distribution.uniform(0.10),
                  "time_constant": Distribution.uniform(0.33)}
    assert w["sea"].model_error.elastic == {"stiffness": Distribution.uniform(0.10),
                                            "motor_inertia": Distribution.uniform(0.10)}
    assert w["wind_light"].wind.w20 == pytest.approx(15 * KNOT) and w["wind_moderate"].wind.w20 == pytest.approx(30 * KNOT)
    assert w["wind_light"].rotor_drag.d == (0.544, 0.386, 0.0)
    assert w["wind_light"].wind.onset == w["wind_moderate"].wind.onset == 2.0
    # disturbed = model_error's draws and wind_light's air, together
    assert w["disturbed"].model_error == w["model_error"].model_error and w["disturbed"].wind == w["wind_light"].wind
    assert w["disturbed"].drag == w["wind_light"].drag and w["disturbed"].rotor_drag == w["wind_light"].rotor_drag
    assert "rising over 2 s" in w["wind_light"].wind.line()
    assert w["thrust_minus5"].model_error.rotors == {"motor_constant": Distribution.fixed(-0.05)}
    p = w["push_base"].pushes[0]
    assert p.link == "base" and p.weight_fraction and p.force == (0.0, 0.2, 0.0) and p.duration == 1.0
    assert world_preset("cad") == w["cad"]
    with pytest.raises(ValueError, match=r"worlds\.kad: no such world; did you mean 'cad'\?$"):
        world_preset("kad")


#: (world body in YAML flow style, the key path named, a part of the problem)
BAD = [
    ("{colour: red}", "worlds.w.colour", "unknown key"),
    ("{model_eror: {}}", "worlds.w.model_eror", "did you mean 'model_error'"),
    ("{description: [a]}", "worlds.w.description", "expected text"),
    ("{model_error: {}}", "worlds.w.model_error", "is empty"),
    ("{model_error: {body: []}}", "worlds.w.model_error.body", "did you mean 'bodies'"),
    ("{model_error: {bodies: []}}", "worlds.w.model_error.bodies", "expected a list of body entries"),
    ("{model_error: {bodies: {links: all}}}", "worlds.w.model_error.bodies", "expected a list"),
    ("{model_error: {bodies: [{links: all, mas: 0.1}]}}", "worlds.w.model_error.bodies[0].mas", "did you mean 'mass'"),
    ("{model_error: {bodies: [{links: legs, mass: 0.1}]}}", "worlds.w.model_error.bodies[0].links", "not a link group"),
    ("{model_error: {bodies: [{links: [a, a], mass: 0.1}]}}", "worlds.w.model_error.bodies[0].links", "twice"),
    ("{model_error: {bodies: [{links: [], mass: 0.1}]}}", "worlds.w.model_error.bodies[0].links", "expected all"),
    ("{model_error: {bodies: [{links: [1], mass: 0.1}]}}", "worlds.w.model_error.bodies[0].links", "expected all"),
    ("{model_error: {bodies: [{links: all}]}}", "worlds.w.model_error.bodies[0]", "perturbs nothing"),
    ("{model_error: {bodies: [{mass: 5}]}}", "worlds.w.model_error.bodies[0].mass", "outside the plausible range"),
    ("{model_error: {bodies: [{mass: '0.1'}]}}", "worlds.w.model_error.bodies[0].mass", "expected a finite number"),
    ("{model_error: {bodies: [{mass: .nan}]}}", "worlds.w.model_error.bodies[0].mass", "expected a finite number"),
    ("{model_error: {bodies: [{mass: true}]}}", "worlds.w.model_error.bodies[0].mass", "expected a finite number"),
    ("{model_error: {bodies: [{mass: {uniform: -0.1}}]}}", "worlds.w.model_error.bodies[0].mass.uniform", "negative"),
    ("{model_error: {bodies: [{mass: {uniform: [0.1, -0.1]}}]}}", "worlds.w.model_error.bodies[0].mass.uniform",
     "reversed"),
    ("{model_error: {bodies: [{mass: {uniform: [0.0, 2.0]}}]}}", "worlds.w.model_error.bodies[0].mass.uniform[1]",
     "outside the plausible range"),
    ("{model_error: {bodies: [{mass: {uniform: [0.1]}}]}}", "worlds.w.model_error.bodies[0].mass.uniform",
     "two bounds"),
    ("{model_error: {bodies: [{mass: {uniform: 0.6}}]}}", "worlds.w.model_error.bodies[0].mass.uniform",
     "outside the plausible range"),
    ("{model_error: {bodies: [{mass: {normal: 0.2}}]}}", "worlds.w.model_error.bodies[0].mass.normal",
     "3 sigma = 0.6 leaves the plausible range"),
    ("{model_error: {bodies: [{mass: {normal: -0.1}}]}}", "worlds.w.model_error.bodies[0].mass.normal", "negative"),
    ("{model_error: {bodies: [{mass: {gauss: 0.1}}]}}", "worlds.w.model_error.bodies[0].mass.gauss", "unknown key"),
    ("{model_error: {bodies: [{mass: {uniform: 0.1, normal: 0.1}}]}}", "worlds.w.model_error.bodies[0].mass",
     "expected one of uniform or normal"),
    ("{model_error: {bodies: [{com: 5}]}}", "worlds.w.model_error.bodies[0].com", "unit slip"),
    ("{model_error: {bodies: [{com: [0.001, 0.002]}]}}", "worlds.w.model_error.bodies[0].com", "expected 3 errors"),
    ("{model_error: {bodies: [{com: [0.0, 0.0, 0.2]}]}}", "worlds.w.model_error.bodies[0].com[2]", "unit slip"),
    ("{model_error: {bodies: [{inertia: -0.7}]}}", "worlds.w.model_error.bodies[0].inertia", "plausible range"),
    ("{model_error: {rotors: {thrust_constant: 0.1}}}", "worlds.w.model_error.rotors.thrust_constant",
     "unknown key"),
    ("{model_error: {rotors: {motor_constant: .inf}}}", "worlds.w.model_error.rotors.motor_constant", "finite"),
    ("{model_error: {rotors: {time_constant: {uniform: 1.5}}}}", "worlds.w.model_error.rotors.time_constant.uniform",
     "plausible range"),
    ("{model_error: {rotors: [0.1]}}", "worlds.w.model_error.rotors", "expected a mapping"),
    ("{model_error: {elastic_joints: {stifness: 0.1}}}", "worlds.w.model_error.elastic_joints.stifness",
     "did you mean 'stiffness'"),
    ("{model_error: {elastic_joints: {stiffness: -0.6}}}", "worlds.w.model_error.elastic_joints.stiffness",
     "plausible range"),
    ("{wind: {w20: 5, gust: 1}, drag: {base: auto}}", "worlds.w.wind.gust", "unknown key"),
    ("{wind: {w20: 5, intensity: light}, drag: {base: auto}}", "worlds.w.wind", "exactly one of w20 and intensity"),
    ("{wind: {altitude: 2}, drag: {base: auto}}", "worlds.w.wind", "exactly one of w20 and intensity"),
    ("{wind: {intensity: strong}, drag: {base: auto}}", "worlds.w.wind.intensity", "not a MIL-F-8785C intensity"),
    ("{wind: {w20: 45}, drag: {base: auto}}", "worlds.w.wind.w20", "knots given as m/s"),
    ("{wind: {w20: -1}, drag: {base: auto}}", "worlds.w.wind.w20", "negative"),
    ("{wind: {w20: 5, altitude: 0}, drag: {base: auto}}", "worlds.w.wind.altitude", "zero"),
    ("{wind: {w20: 5, altitude: 400}, drag: {base: auto}}", "worlds.w.wind.altitude", "1000 ft"),
    ("{wind: {w20: 5, direction_deg: north}, drag: {base: auto}}", "worlds.w.wind.direction_deg", "finite number"),
    ("{wind: {w20: 5, mean: calm}, drag: {base: auto}}", "worlds.w.wind.mean", "neither log_profile"),
    ("{wind: {w20: 5, mean: [1, 2]}, drag: {base: auto}}", "worlds.w.wind.mean", "3 velocities"),
    ("{wind: {w20: 5, mean: [100, 0, 0]}, drag: {base: auto}}", "worlds.w.wind.mean[0]", "hurricane"),
    ("{wind: {w20: 5, turbulence: vonkarman}, drag: {base: auto}}", "worlds.w.wind.turbulence", "not a turbulence"),
    ("{wind: {w20: 5, airspeed: 0}, drag: {base: auto}}", "worlds.w.wind.airspeed", "zero"),
    ("{wind: {w20: 5, z0: 10}, drag: {base: auto}}", "worlds.w.wind.z0", "plausible range"),
    ("{wind: {w20: 5, onset: -1}, drag: {base: auto}}", "worlds.w.wind.onset", "negative"),
    ("{wind: {w20: 5, onset: 2000}, drag: {base: auto}}", "worlds.w.wind.onset", "outlasts the flight"),
    ("{wind: {w20: 5, onset: soon}, drag: {base: auto}}", "worlds.w.wind.onset", "finite number"),
    ("{wind: {w20: 5}}", "worlds.w.wind", "acts only through drag"),
    ("{wind: [5]}", "worlds.w.wind", "expected a mapping"),
    ("{drag: {}}", "worlds.w.drag", "is empty"),
    ("{drag: [base]}", "worlds.w.drag", "expected a mapping"),
    ("{drag: {link3: auto}}", "worlds.w.drag.link3", "only the base has an automatic"),
    ("{drag: {base: -1}}", "worlds.w.drag.base", "negative"),
    ("{drag: {base: [0.1, 0.2]}}", "worlds.w.drag.base", "C_D A along"),
    ("{drag: {base: [0.1, -0.2, 0.1]}}", "worlds.w.drag.base[1]", "plausible range"),
    ("{drag: {base: 20}}", "worlds.w.drag.base", "plausible range"),
    ("{drag: {base: {cda: 0.1, point: [1, 2]}}}", "worlds.w.drag.base.point", "3 numbers"),
    ("{drag: {base: {point: [0, 0, 0]}}}", "worlds.w.drag.base.cda", "missing"),
    ("{drag: {base: {cda: 0.1, area: 2}}}", "worlds.w.drag.base.area", "unknown key"),
    ("{rotor_drag: {}}", "worlds.w.rotor_drag.d", "missing"),
    ("{rotor_drag: {d: [0.5, 0.4]}}", "worlds.w.rotor_drag.d", "3 coefficients"),
    ("{rotor_drag: {d: [-0.1, 0, 0]}}", "worlds.w.rotor_drag.d[0]", "plausible range"),
    ("{rotor_drag: {d: [10, 0, 0]}}", "worlds.w.rotor_drag.d[0]", "Faessler"),
    ("{rotor_drag: {d: [0.5, 0.4, 0], point: centre}}", "worlds.w.rotor_drag.point", "neither rotors"),
    ("{rotor_drag: {d: [0.5, 0.4, 0], kind: linear}}", "worlds.w.rotor_drag.kind", "unknown key"),
    ("{pushes: {link: base}}", "worlds.w.pushes", "expected a list of pushes"),
    ("{pushes: []}", "worlds.w.pushes", "expected a list of pushes"),
    ("{pushes: [{force: [1, 0, 0]}]}", "worlds.w.pushes[0].link", "missing"),
    ("{pushes: [{link: '', force: [1, 0, 0]}]}", "worlds.w.pushes[0].link", "non-empty string"),
    ("{pushes: [{link: base}]}", "worlds.w.pushes[0]", "exactly one of force and weight_fraction"),
    ("{pushes: [{link: base, force: [1, 0, 0], weight_fraction: [0.1, 0, 0]}]}", "worlds.w.pushes[0]", "exactly one"),
    ("{pushes: [{link: base, force: [1, 0]}]}", "worlds.w.pushes[0].force", "3 numbers"),
    ("{pushes: [{link: base, force: [1.0e+5, 0, 0]}]}", "worlds.w.pushes[0].force[0]", "10 kN"),
    ("{pushes: [{link: base, weight_fraction: [20, 0, 0]}]}", "worlds.w.pushes[0].weight_fraction[0]", "weights"),
    ("{pushes: [{link: base, force: [1, 0, 0], point: [0, 0, 50]}]}", "worlds.w.pushes[0].point[2]", "unit slip"),
    ("{pushes: [{link: base, force: [1, 0, 0], duration: 0}]}", "worlds.w.pushes[0].duration", "zero"),
    ("{pushes: [{link: base, force: [1, 0, 0], duration: 1, ramp: 0.6}]}", "worlds.w.pushes[0].ramp",
     "longer than the duration"),
    ("{pushes: [{link: base, force: [1, 0, 0], start: soon}]}", "worlds.w.pushes[0].start", "finite number"),
    ("{pushes: [{link: base, force: [1, 0, 0], strength: 2}]}", "worlds.w.pushes[0].strength", "unknown key"),
    ("{air_density: 0}", "worlds.w.air_density", "zero"),
    ("{air_density: 5}", "worlds.w.air_density", "ISA"),
]


@pytest.mark.parametrize("body,key,problem", BAD)
def test_every_bad_key_is_refused_in_one_line(tmp_path, body, key, problem):
    p = tmp_path / "world.yaml"
    p.write_text(f"worlds:\n  w: {body}\n")
    with pytest.raises(ValueError) as e:
        load_worlds(p)
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"{p}: {key}: "), line
    assert problem in line and "; " in line, line


@pytest.mark.parametrize("text,key,problem", [
    ("[1, 2]\n", "", "expected a mapping with worlds:"),
    ("profiles: {}\n", "profiles", "unknown key"),
    ("{}\n", "worlds", "missing"),
    ("worlds: {}\n", "worlds", "is empty"),
    ("worlds: [a]\n", "worlds", "expected a mapping"),
    ("worlds:\n  w: {mass: 0.1\n", "line 3, column 1, in worlds.w", "expected ','"),
])
def test_a_bad_document_is_refused_in_one_line(tmp_path, text, key, problem):
    p = tmp_path / "world.yaml"
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        load_worlds(p)
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"{p}: {key + ': ' if key else ''}"), line
    assert problem in line, line
    with pytest.raises(ValueError, match="cannot be read"):
        load_worlds(tmp_path / "none.yaml")


def test_a_good_file_reads_every_key(tmp_path):
    p = tmp_path / "world.yaml"
    p.write_text(textwrap.dedent("""\
        worlds:
          all:
            description: every key
            model_error:
              bodies:
                - {links: all, mass: {normal: 0.05}, com: [0.001, {uniform: 0.002}, {uniform: [-0.003, 0.0]}]}
                - {links: [link2, link3], inertia: 0.1}
              rotors: {motor_constant: -0.05, moment_constant: {uniform: 0.1}, time_constant: {normal: 0.1}}
              elastic_joints: {stiffness: 0.1, motor_inertia: {uniform: [0.0, 0.2]}}
            wind: {w20: 6.0, altitude: 3.0, direction_deg: 90.0, mean: [0.0, 4.0, 0.0], turbulence: none,
                   airspeed: 3.0, z0: 0.1}
            drag: {base: {cda: [0.01, 0.01, 0.02], point: [0.0, 0.0, 0.05]}, link4: 0.002}
            rotor_drag: {d: [0.3, 0.3, 0.0], point: [0.0, 0.0, 0.01]}
            pushes:
              - {link: link7, force: [0.0, 0.0, -5.0], point: [0.0, 0.0, -0.1], start: 1.0, duration: 0.5, ramp: 0.1}
              - {link: base, weight_fraction: [0.1, 0.0, 0.0]}
            air_density: 1.112
        """))
    w = load_worlds(p)["all"]
    b0, b1 = w.model_error.bodies
    assert b0.mass == Distribution.normal(0.05) and b0.com == (Distribution.fixed(0.001), Distribution.uniform(0.002),
                                                                 Distribution.uniform(-0.003, 0.0))
    assert b1.links == ("link2", "link3") and b1.inertia == Distribution.fixed(0.1) and b1.mass is None
    assert w.wind.mean == (0.0, 4.0, 0.0) and not w.wind.turbulence and w.wind.passing_speed() == 3.0
    assert [d.link for d in w.drag] == ["base", "link4"] and w.drag[1].cda == (0.002,) * 3
    assert w.rotor_drag.point == (0.0, 0.0, 0.01) and w.air_density == 1.112
    assert w.pushes[0].ramp == 0.1 and w.pushes[1].duration == math.inf and w.pushes[1].weight_fraction

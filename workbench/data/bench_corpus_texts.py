"""Texts the bench corpus's synthesized voices read, written for this project (no third-party text).

Two disjoint pools: dev voices read :data:`DEV_PASSAGES`, test voices :data:`TEST_PASSAGES`, so a
test window's words were never seen while anything was tuned. A passage is a few sentences of one
kind (``content``): ``prose``, ``numerals`` (digits, dates, amounts and times, left as digits so the
voice's text normalization and the recognizer's number formatting are both exercised), ``names``
(people, places, products) and ``long`` (a long-form passage that fills most of a 30 s window).
Changing a text changes the corpus's content hash, so cached audio is never served for new words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Content = Literal["prose", "numerals", "names", "long"]


@dataclass(frozen=True, slots=True)
class Passage:
    content: Content
    sentences: tuple[str, ...]


def _p(content: Content, *sentences: str) -> Passage:
    return Passage(content, sentences)


DEV_PASSAGES: tuple[Passage, ...] = (
    _p("prose",
       "The library closes early on public holidays, so plan your visit for the morning.",
       "Most of the older books are kept on the third floor, next to the reading room.",
       "You can borrow up to ten items at a time with a regular card."),
    _p("numerals",
       "The train to the airport leaves every 15 minutes between 6:30 and 23:00.",
       "A single ticket costs 4 euros and 80 cents, and a day pass costs 12 euros.",
       "The journey takes about 35 minutes if there are no delays."),
    _p("names",
       "Professor Okafor and Doctor Lindqvist will present their results in Copenhagen.",
       "After the talk, Hiroshi Tanaka from Osaka will chair the panel on climate models.",
       "The dinner is at a small restaurant on Nørrebrogade called Café Aurora."),
    _p("long",
       "When the first cold nights arrive, the gardeners begin to bring the tender plants indoors.",
       "The lemon trees go into the glasshouse, where a small stove keeps the air above freezing.",
       "The dahlias are lifted, dried for a week, and stored in boxes of sand in the cellar.",
       "Leaves are raked into large cages and left to rot into compost for the following spring.",
       "By the end of November the beds are bare, mulched, and waiting for the first frost."),
    _p("prose",
       "Please close all the windows before you leave the office tonight.",
       "The cleaning team starts at eight and needs the meeting rooms to be empty.",
       "If you work late, tell the security desk on the ground floor."),
    _p("numerals",
       "Flight 2417 to Chicago has been moved from gate B12 to gate C4.",
       "Boarding now starts at 14:05, and the doors close at 14:40.",
       "Passengers in rows 20 to 38 are invited to board first."),
    _p("names",
       "Amelia Novak founded the company in Brno together with her brother Tomas.",
       "Their first product, a sensor called Lumen, was sold in Vienna and Kraków.",
       "Today the firm employs nearly three hundred people across Central Europe."),
    _p("long",
       "The bridge over the estuary took almost six years to build, and for most of that time "
       "the town argued about whether it should have been built at all.",
       "Fishermen worried that the pillars would change the currents and drive the fish away.",
       "Shop owners feared that visitors would simply drive past on their way to the coast.",
       "In the end the bridge brought more people than anyone expected, and the harbour market now "
       "opens every weekend from April until October."),
    _p("prose",
       "Water the seedlings lightly every morning and keep them away from direct sun.",
       "After two weeks, move the strongest ones into larger pots with fresh soil.",
       "Do not let the soil dry out completely between waterings."),
    _p("numerals",
       "Your order number is 88 514, and it should arrive on the 3rd of March.",
       "The total comes to 129 dollars and 99 cents, with free shipping.",
       "If you need help, call 0800 246 135 between 9 and 5."),
)

TEST_PASSAGES: tuple[Passage, ...] = (
    _p("prose",
       "The kettle clicked off just as the rain began to hammer on the kitchen window.",
       "She poured two cups of tea and carried them carefully into the living room.",
       "Outside, the street lamps flickered on one after another."),
    _p("numerals",
       "The meeting on the 14th of July starts at 10:15 in room 305.",
       "We expect about 240 guests, and the budget is 18 thousand 500 pounds.",
       "Registration closes on June 30th at midnight."),
    _p("names",
       "Inspector Moreau questioned Señora Delgado and her neighbour, Mister Whitfield.",
       "Both of them had seen a grey van parked outside the bakery on Rue Cambon.",
       "Nobody had noticed the driver, a tall man in a blue raincoat."),
    _p("long",
       "Every spring the river carries snowmelt from the mountains down through the narrow valley.",
       "For a few weeks the water runs brown and fast, and the old stone mill turns again.",
       "Children from the village gather on the footbridge to watch branches race underneath.",
       "By midsummer the flow has dropped, the banks are green, and herons stand in the shallows.",
       "In autumn the leaves fall into the water and drift slowly towards the lake."),
    _p("prose",
       "Remember to back up your photos before you update the phone.",
       "The update can take up to an hour and the phone will restart twice.",
       "Keep it plugged in and connected to the network until it finishes."),
    _p("numerals",
       "The recipe needs 250 grams of flour, 3 eggs, and 175 millilitres of milk.",
       "Bake it at 180 degrees for 25 to 30 minutes.",
       "It serves 6 people and keeps for 2 days in the fridge."),
    _p("names",
       "The expedition was led by Captain Ingrid Solberg and the geologist Rafael Ortega.",
       "They sailed from Tromsø to Svalbard aboard a research ship named Polarlys.",
       "Their samples are now stored at the university in Bergen."),
    _p("long",
       "The night market opens when the office workers start to head home, and within an hour "
       "the whole square is full of smoke, music and the smell of grilled food.",
       "Some stalls sell noodles cooked in enormous iron pans, others sell fresh fruit on ice.",
       "Near the fountain an old man repairs watches under a single bright lamp.",
       "Most visitors walk the full circle twice before they finally decide what to eat."),
    _p("prose",
       "The museum's new wing is dedicated to the history of printing.",
       "Visitors can set their own names in metal type and print a small card.",
       "Guided tours run every afternoon and last about forty minutes."),
    _p("numerals",
       "In 1969 the mission travelled about 384 thousand kilometres to reach the Moon.",
       "The crew spent 21 hours on the surface and brought back 22 kilograms of rock.",
       "The whole trip took a little over 8 days."),
)

__all__ = ["DEV_PASSAGES", "TEST_PASSAGES", "Content", "Passage"]
